"""The app's modules import one way: no cycle, counting imports inside functions (lint-imports, run by
./bw test, checks the layers themselves; see pyproject.toml [tool.importlinter])."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

from benchweb.celery import app
from jobs import messages, tasks

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("jobs", "audit", "benchweb")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)


def _cycle(graph: grimp.ImportGraph) -> list[str] | None:
    """One import cycle among the app's modules (migrations aside), or None."""
    modules = sorted(m for m in graph.modules if ".migrations" not in m)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if ".migrations" in imported:
                continue
            if state.get(imported) == 1:
                return [*path[path.index(imported) :], imported]
            if imported not in state and (found := visit(imported)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in modules:
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_module_of_the_app_imports_itself_round_a_cycle(graph: grimp.ImportGraph) -> None:
    cycle = _cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_sees_imports_inside_functions(graph: grimp.ImportGraph) -> None:
    # apps.ready() imports the models inside a function: the graph must see it, or a cycle hidden in a
    # function would pass unnoticed.
    assert "jobs.models" in graph.find_modules_directly_imported_by("jobs.apps")


def test_the_use_cases_send_work_by_names_the_workers_register() -> None:
    registered = {name for name in app.tasks if name.startswith("jobs.")}
    assert tasks.launch_run.name in registered
    assert set(messages.NAMES) <= registered, set(messages.NAMES) - registered
