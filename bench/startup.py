"""How fast and how heavy benchweb starts: a warm `./bw run` to its first page, a migrate with nothing to do, and
the resident memory of an idle worker.

    .venv/bin/python bench/startup.py [--starts 3] [--migrates 5] [--idle 10] [--smoke] [--json]

Everything runs from this checkout in a fresh temporary directory (BENCHWEB_VAR_DIR; SQLite, as a fresh clone
runs), on a free port, with the virtualenv this script runs in (BENCHWEB_VENV) and the demo target when sshd and
fio are here:

1. `./bw run` once, cold (its database is created and migrated, the demo target set up), until GET / answers
   200 (the login page, after the redirect); then Ctrl-C (SIGINT), and it must exit within 30 s.
2. --starts warm starts, the same way: the wall time from starting `./bw run` to the first page. During each,
   once the page answered, the stack is left idle --idle seconds and the resident memory (RSS) of the Celery
   worker's process (a thread pool: one process), of the web server (gunicorn's master and workers) and of beat
   is read from /proc.
3. --migrates runs of `manage.py migrate --noinput` on that migrated database (nothing to do): wall time and the
   child's peak RSS (getrusage through wait4).

Also reported: which heavy libraries a process that starts Django and imports the models, the tasks and the URLs
has loaded (none of numpy, scipy, ruptures, apprise: they are imported where they are used;
tests/stack/test_startup.py keeps it so), the load average, the machine and the commit.

Targets (a quiet machine; issue 29): warm `./bw run` to the first page <= 4 s (median), no-op migrate <= 1 s
(median), idle worker RSS <= 160 MB. Exit status: 0 met, 1 missed, 2 the measurement failed, 130 interrupted.
--smoke: one warm start, 1 s idle, one migrate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit import (
    ROOT,
    BenchError,
    Stack,
    add_smoke_option,
    code_version,
    free_port,
    interrupt_on_signals,
    parse_args,
    run_guarded,
    say,
    spawn,
    verdict_status,
)

TARGET_FIRST_PAGE_S = 4.0
TARGET_MIGRATE_S = 1.0
TARGET_WORKER_MB = 160.0
HEAVY = ("numpy", "scipy", "ruptures", "apprise", "pandas", "matplotlib")
IMPORT_CHECK = f"""
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")
import django
django.setup()
import jobs.models, jobs.tasks, benchweb.urls  # noqa: E401
print(" ".join(m for m in {HEAVY!r} if m in sys.modules))
"""


def environment(stack: Stack, port: int) -> dict[str, str]:
    # As a user's shell has it: no DATABASE_URL or REDIS_URL (SQLite and the embedded Redis), and bytecode
    # written and reused (PYTHONDONTWRITEBYTECODE would compile every module again at each start).
    drop = ("DATABASE_URL", "REDIS_URL", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {
        "BENCHWEB_VAR_DIR": str(stack.var),
        "BENCHWEB_PORT": str(port),
        "BENCHWEB_VENV": str(Path(sys.executable).parent.parent),
        "BENCHWEB_LOG_LEVEL": "WARNING",
    }


def page_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310  (our own http URL)
            return bool(response.status == 200)
    except OSError:
        return False


def start(stack: Stack, env: dict[str, str], url: str, log: Path, timeout: float = 120) -> tuple[Any, float]:
    """`./bw run` until GET url answers 200: (the process, seconds it took)."""
    began = time.perf_counter()
    process = spawn([str(ROOT / "bw"), "run"], log, env)
    stack.worker = process  # stopped by stack.close() whatever happens
    while not page_answers(url):
        if process.poll() is not None:
            raise BenchError(f"./bw run exited with status {process.returncode}:\n{log.read_text()[-3000:]}")
        if time.perf_counter() - began > timeout:
            raise BenchError(f"./bw run did not answer {url} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    return process, time.perf_counter() - began


def stop(stack: Stack, process: Any, log: Path) -> None:
    """Ctrl-C, as a user stops it; it must be gone within 30 s."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise BenchError(f"./bw run did not stop within 30 s of Ctrl-C:\n{log.read_text()[-3000:]}") from None
    stack.worker = None


def rss_mb(process: Any) -> dict[str, float]:
    """RSS of the stack's worker, web server (master and workers) and beat, by the command lines of its children."""
    import psutil

    found: dict[str, float] = {}
    for child in psutil.Process(process.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            argv = child.cmdline()
            name = ("worker" if "worker" in argv and "celery" in " ".join(argv) else
                    "beat" if "beat" in argv else "web" if any("gunicorn" in a for a in argv) else "")  # fmt: skip
            if name:
                found[name] = found.get(name, 0.0) + child.memory_info().rss / 2**20
    return found


def migrate(env: dict[str, str]) -> tuple[float, float]:
    """(wall s, peak RSS MB) of `manage.py migrate --noinput` with nothing to do."""
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env)
    # wait4 rather than wait: it returns the child's own resource use (its peak RSS)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise BenchError(f"manage.py migrate exited with status {child.returncode}")
    return wall, usage.ru_maxrss / 1024


def heavy_imports(env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", IMPORT_CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    return out.split()


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    stack.var.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = environment(stack, port)
    load_before = os.getloadavg()
    say("./bw run, cold (migrates a new database, sets up the demo target) ...")
    log = stack.tmp / "bw-run.log"
    process, cold_s = start(stack, env, url, log)
    stop(stack, process, log)
    starts, rss = [], []
    for i in range(args.starts):
        say(f"./bw run, warm start {i + 1} of {args.starts} ...")
        process, seconds = start(stack, env, url, log)
        starts.append(seconds)
        time.sleep(args.idle)
        rss.append(rss_mb(process))
        stop(stack, process, log)
    say(f"manage.py migrate with nothing to do, {args.migrates} times ...")
    migrates = [migrate(env) for _ in range(args.migrates)]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "code": code_version(),
        "machine": f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
                   f"Python {platform.python_version()}",
        "load_before": load_before, "load_after": os.getloadavg(), "cold_s": cold_s, "starts_s": starts,
        "idle_s": args.idle, "rss_mb": rss, "migrate_s": [m[0] for m in migrates],
        "migrate_mb": [m[1] for m in migrates], "heavy_imports": heavy_imports(env),
    }  # fmt: skip


def report(r: dict[str, Any]) -> bool:
    first_page = statistics.median(r["starts_s"])
    migrate_s = statistics.median(r["migrate_s"])
    worker = max(x.get("worker", 0.0) for x in r["rss_mb"])
    rows = [
        ("warm ./bw run to the first page (median)", f"{first_page:.2f} s", f"<= {TARGET_FIRST_PAGE_S:g} s",
         first_page <= TARGET_FIRST_PAGE_S),
        ("no-op migrate (median)", f"{migrate_s:.2f} s", f"<= {TARGET_MIGRATE_S:g} s", migrate_s <= TARGET_MIGRATE_S),
        (f"idle worker RSS ({r['idle_s']:g} s idle, max)", f"{worker:.0f} MB", f"<= {TARGET_WORKER_MB:g} MB",
         worker <= TARGET_WORKER_MB),
    ]  # fmt: skip
    print(f"{r['date']}, {r['code']}; {r['machine']}")
    print(f"load average (1/5/15 min): {'/'.join(f'{x:.2f}' for x in r['load_before'])} before, "
          f"{'/'.join(f'{x:.2f}' for x in r['load_after'])} after")  # fmt: skip
    print(f"cold ./bw run (new database, demo target) to the first page: {r['cold_s']:.2f} s")
    print("warm starts to the first page: " + ", ".join(f"{s:.2f} s" for s in r["starts_s"]))
    for i, sizes in enumerate(r["rss_mb"], 1):
        print(
            f"  start {i}, RSS after {r['idle_s']:g} s idle: " + ", ".join(f"{k} {v:.0f} MB" for k, v in sizes.items())
        )
    print("no-op migrate: " + ", ".join(f"{s:.2f} s" for s in r["migrate_s"]) +
          f"; peak RSS {max(r['migrate_mb']):.0f} MB")  # fmt: skip
    print(f"heavy libraries loaded at start-up (of {', '.join(HEAVY)}): {', '.join(r['heavy_imports']) or 'none'}")
    met = True
    for label, value, target, ok in rows:
        print(f"{label:<44}{value:>10}  {target:<10} {'PASS' if ok else 'FAIL'}")
        met = met and ok
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3, help="warm starts of ./bw run (default 3)")
    parser.add_argument("--migrates", type=int, default=5, help="no-op migrates (default 5)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before reading RSS (default 10)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, starts=1, migrates=1, idle=1.0)
    args = parse_args(parser, argv)
    if args.starts < 1 or args.migrates < 1 or args.idle < 0:
        parser.error("need --starts >= 1, --migrates >= 1, --idle >= 0")
    interrupt_on_signals()
    stack = Stack("benchweb-startup-")
    status, result = run_guarded("startup", stack, lambda: measure(args, stack))
    if result is None:
        return status
    if args.json:
        print(json.dumps(result, indent=2))
    return verdict_status(args, report(result))


if __name__ == "__main__":
    sys.exit(main())
