"""The README's run command, started for real: embedded Redis, web, worker and beat."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request

import psutil
import pytest

from benchweb import stack as supervisor
from benchweb.stack import redis_answers
from tests.stacks import ROOT, processes_of, stack_env, wait_for_line

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_run_command_serves_http_runs_tasks_and_leaves_nothing_behind(stack):
    process, var_dir, port, env = stack
    url = f"http://127.0.0.1:{port}/"

    with urllib.request.urlopen(url + "login/", timeout=10) as response:  # noqa: S310
        assert response.status == 200
        assert b"Log in" in response.read()

    health = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "health", "--timeout", "30"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert health.returncode == 0, health.stderr
    assert '"worker": {"worker"' in health.stdout
    assert (var_dir / "redis.sock").exists()

    # redis-server rewrites its process title over its environment, so also take the launcher's tree.
    started = {p.pid: p for p in [*processes_of(var_dir), *psutil.Process(process.pid).children(recursive=True)]}
    started = list(started.values())
    names = " ".join(" ".join(p.cmdline()) for p in started)
    for part in ("redis-server", "gunicorn", "worker", "beat", "benchweb.stack"):
        assert part in names

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=40) == 0
    time.sleep(0.5)
    assert [p.pid for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert processes_of(var_dir) == []


def test_a_second_run_command_on_the_same_var_dir_refuses_and_leaves_the_first_running(stack):
    process, _var_dir, port, env = stack
    second = subprocess.run([str(ROOT / "bw"), "run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert "already running" in second.stderr
    assert process.poll() is None
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
        assert response.status == 200


def test_the_run_command_says_which_port_is_busy(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        env = stack_env(tmp_path / "var", port)
        result = subprocess.run(
            [str(ROOT / "bw"), "run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr and "BENCHWEB_PORT" in result.stderr


def _children_by_role(stack_pid: int) -> dict[str, int]:
    """The stack's own children (redis, demo sshd, web, worker, beat), by what their command line runs."""
    roles = {"redis-server": "redis", "sshd": "demo-sshd", "gunicorn": "web", " worker ": "worker", " beat ": "beat"}
    found = {}
    for child in psutil.Process(stack_pid).children():
        cmdline = " " + " ".join(child.cmdline()) + " "
        found |= {role: child.pid for needle, role in roles.items() if needle in cmdline}
    return found


def test_a_killed_worker_or_redis_is_restarted_alone_and_ctrl_c_still_stops_everything(stack):
    process, var_dir, port, env = stack
    before = _children_by_role(process.pid)
    assert {"redis", "web", "worker", "beat"} <= before.keys(), before

    os.kill(before["worker"], signal.SIGKILL)
    wait_for_line(process.stdout, "benchweb: worker was killed by SIGKILL; restarting it in 1 s", timeout=30)
    wait_for_line(process.stdout, "benchweb: worker restarted (pid", timeout=30)

    after = _children_by_role(process.pid)
    assert after["worker"] != before["worker"] and psutil.pid_exists(after["worker"])
    assert {role: pid for role, pid in after.items() if role != "worker"} == {
        role: pid for role, pid in before.items() if role != "worker"
    }
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
        assert response.status == 200

    # The embedded Redis comes back on the same socket, and the new worker reconnects to it.
    os.kill(after["redis"], signal.SIGKILL)
    wait_for_line(process.stdout, "benchweb: redis was killed by SIGKILL; restarting it in 1 s", timeout=30)
    wait_for_line(process.stdout, "benchweb: redis restarted (pid", timeout=30)
    final = _children_by_role(process.pid)
    assert final["redis"] != after["redis"] and final["worker"] == after["worker"] and final["web"] == after["web"]
    deadline = time.monotonic() + 15
    while not redis_answers(var_dir / "redis.sock"):
        assert time.monotonic() < deadline, "the restarted Redis does not answer on its socket"
        time.sleep(0.1)
    health = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "health", "--timeout", "60"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert health.returncode == 0, health.stderr  # the new worker consumes

    started = [psutil.Process(pid) for pid in final.values()]
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=40) == 0
    time.sleep(0.5)
    assert [p.pid for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert processes_of(var_dir) == []


def test_a_child_that_keeps_crashing_is_restarted_with_a_doubling_capped_delay_and_said_to_loop(capsys):
    child = supervisor.Child("flaky", ["sh", "-c", "exit 3"], dict(os.environ))
    now = 1000.0
    delays = []
    for _ in range(8):
        child.process.wait()
        child.supervise(now)  # notices the exit
        delays.append(child.delay)
        child.supervise(now + child.delay - 0.1)  # too early: still waiting
        assert child.restart_at is not None
        now += child.delay
        child.supervise(now)  # restarts it
        assert child.restart_at is None
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]
    out = capsys.readouterr().out
    assert "benchweb: flaky exited with status 3; restarting it in 1 s\n" in out
    assert "it crashed 4 times" not in out
    assert "it crashed 5 times in a row, each within 60 s of starting" in out
    assert "it crashed 8 times in a row" in out
    assert out.count("benchweb: flaky restarted (pid") == 8

    # One that stayed up a while starts again from the shortest delay.
    child.process.wait()
    child.supervise(now + supervisor.STABLE_AFTER_S)
    assert child.delay == supervisor.RESTART_FIRST_S
    child.supervise(now + supervisor.STABLE_AFTER_S + 1)
    child.process.wait()
