"""No module of the suite imports a test module (tests/**/test_*.py), counting imports inside functions: what tests
share lives in a helper module (tests/builders.py, tests/notify/channels.py, ...) or a conftest.py fixture, so that
a test module can be changed, moved or deleted for its own tests' sake without breaking another."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def imported_test_modules(path: Path, root: Path) -> list[str]:
    """The test modules under root/tests that the module at `path` imports, anywhere in it (as dotted names)."""
    package = path.relative_to(root).parent.parts
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module.split(".") if node.module else []
            if node.level:
                base = [*package[: len(package) - node.level + 1], *base]
            # `from tests.x import test_y` imports the module tests.x.test_y.
            names = [".".join(base), *(".".join([*base, alias.name]) for alias in node.names)]
        else:
            continue
        found += [name for name in names if _is_test_module(name, root)]
    return found


def _is_test_module(name: str, root: Path) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and parts[-1].startswith("test_") and root.joinpath(*parts).with_suffix(".py").is_file()


def test_no_module_of_the_suite_imports_a_test_module():
    found = {
        str(path.relative_to(ROOT)): imported
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if (imported := imported_test_modules(path, ROOT))
    }
    assert found == {}, "move what they share into a helper module or a conftest.py fixture"


def test_every_form_of_import_is_found_inside_functions_too(tmp_path):
    (tmp_path / "tests" / "notify").mkdir(parents=True)
    for name in ("__init__.py", "notify/__init__.py", "notify/test_channels.py", "notify/channels.py", "test_top.py"):
        (tmp_path / "tests" / name).write_text("")
    importer = tmp_path / "tests" / "notify" / "test_live.py"
    importer.write_text(
        "import tests.notify.test_channels\n"
        "from tests.notify import channels, test_channels\n"
        "from tests.notify.channels import EVENT\n"
        "def test_it():\n"
        "    from tests.notify.test_channels import EVENT\n"
        "    from .test_channels import post\n"
        "    from . import test_channels as same\n"
        "    from ..test_top import helper\n"
    )
    assert imported_test_modules(importer, tmp_path) == [
        "tests.notify.test_channels",
        "tests.notify.test_channels",
        "tests.notify.test_channels",
        "tests.notify.test_channels",
        "tests.notify.test_channels",
        "tests.test_top",
    ]
