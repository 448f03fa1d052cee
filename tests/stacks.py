"""The README's run command (`./bw run`: benchweb/stack.py) started for real by tests, on a var dir and a
free port of the test's own, and driven from outside: signed up to, called through the API, polled."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import requests
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


# How long a test waits for what a running stack does in the background.
WAIT_S = 60.0


@dataclass
class Stack:
    """A running stack seen from outside, as a person and an API client use it."""

    url: str
    env: dict[str, str]
    api: requests.Session  # the token holder's
    browser: requests.Session  # the signed-up person's session

    def call(self, method: str, path: str, expect: int = 200, **body: Any) -> Any:
        answer = self.api.request(method, self.url + path, json=body or None, timeout=30)
        assert answer.status_code == expect, f"{method} {path}: {answer.status_code} {answer.text[:2000]}"
        return answer.json() if answer.content else None

    def manage(self, *args: str) -> str:
        done = subprocess.run([str(ROOT / ".venv/bin/python"), "manage.py", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, f"manage.py {args[0]}: {done.stderr}"
        return done.stdout


def poll(what: str, found: Callable[[], Any], timeout: float = WAIT_S, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := found()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(every)
    return got


def sign_up(url: str, username: str, password: str) -> requests.Session:
    browser = requests.Session()
    browser.get(f"{url}/signup/", timeout=30).raise_for_status()
    answer = browser.post(f"{url}/signup/", timeout=30, allow_redirects=False, data={
        "csrfmiddlewaretoken": browser.cookies["csrftoken"], "username": username, "email": "",
        "password1": password, "password2": password,
    })  # fmt: skip
    assert answer.status_code == 302, answer.text[:2000]
    return browser


def final(stack: Stack, run_id: int) -> dict[str, Any]:
    """The run as GET /api/v1/runs/<id>/ gives it once it reached a final state."""

    def ended() -> dict[str, Any] | None:
        run = stack.call("GET", f"/api/v1/runs/{run_id}/")
        return run if run["final"] else None

    return poll(f"run {run_id} to end", ended, timeout=90)
