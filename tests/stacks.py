"""The README's run command (`./bw run`: benchweb/stack.py) started for real by tests, on a var dir and a
free port of the test's own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stack_env(var_dir: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    env |= {"BENCHWEB_VAR_DIR": str(var_dir), "BENCHWEB_PORT": str(port), "BENCHWEB_WEB_WORKERS": "1"}
    if connection.vendor == "postgresql":
        # Point the stack at the test database, so the PostgreSQL pass exercises it too.
        s = connection.settings_dict
        env["DATABASE_URL"] = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return env


def processes_of(var_dir: Path) -> list[psutil.Process]:
    """Every process whose environment names this stack's var dir: all it started, however deep."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("BENCHWEB_VAR_DIR") == str(var_dir) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_for_line(stream, needle: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never printed {needle!r}; output was:\n{''.join(seen[-40:])}")


@contextmanager
def running_stack(var_dir: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """`./bw run` with this environment, up and answering; stopped with Ctrl-C afterwards, and whatever it left
    killed."""
    process = subprocess.Popen(
        [str(ROOT / "bw"), "run"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        wait_for_line(process.stdout, "benchweb is running at", timeout=120)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
        for leftover in processes_of(var_dir):
            leftover.kill()
