"""Every bench script still runs (issue 29, item 12: bench/api_runs_list.py had rotted unseen): each bench/*.py
with --smoke (tiny sizes, seconds) as a process of its own, on this session's database (SQLite, or a PostgreSQL
database of its own on the session's server), must exit 0 and print its figures. A new script is included by
being in bench/; a module that only helps the scripts is named in HELPERS."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from jobs import sshd_local
from tests import sharing

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"
HELPERS = {"benchkit.py"}
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS)
SMOKE_TIMEOUT_S = 300
SMOKE_AT_ONCE = 3

# The slowest first, so that the last to finish is not one of them.
SLOWEST = ("observer_cost.py", "fleet_sites.py", "fanout.py", "startup.py", "api_runs_list.py", "start_precision.py")

sys.path.insert(0, str(BENCH))
import benchkit  # noqa: E402  (bench/ is not a package)
import start_precision  # noqa: E402

sys.path.remove(str(BENCH))


def _needs(script: str) -> list[str]:
    text = (BENCH / script).read_text()
    signs = (("sshd", "start_sshd("), ("fio", '"fio"'), ("network namespaces", "network_namespaces_problem("))
    return [what for what, sign in signs if sign in text]


def _missing(script: str) -> list[str]:
    return [what for what in _needs(script) if _absent(what)]


def _absent(what: str) -> bool:
    return bool(_problem(what))


def _problem(what: str) -> str:
    if what == "network namespaces":
        return benchkit.network_namespaces_problem()
    if not (sshd_local.sshd_available() if what == "sshd" else shutil.which("fio")):
        return f"{what} is missing: the bench script needs it (apt-get install openssh-server fio)"
    return ""


def _require(what: str) -> None:
    if reason := _problem(what):
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _takes_database(script: str) -> bool:
    return "add_database_options(" in (BENCH / script).read_text()


def _database_options(script: str) -> list[str]:
    """On a PostgreSQL session, a database of the script's own on the same server (it creates and drops it)."""
    if not _takes_database(script):
        return []
    if connection.vendor != "postgresql":
        return ["--db", "sqlite"]
    return ["--db", "postgres", "--database-url", f"{_pg_server()}/bw_smoke_{Path(script).stem}_{os.getpid()}"]


def _pg_server() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}{':' + s['PASSWORD'] if s['PASSWORD'] else ''}@{s['HOST']}:{s['PORT'] or 5432}"


def test_every_bench_module_but_the_helpers_is_a_script_with_a_smoke_mode():
    for script in SCRIPTS:
        text = (BENCH / script).read_text()
        assert 'if __name__ == "__main__":' in text and "add_smoke_option(" in text, script


def _smoke(script: str, env: dict[str, str], tmp: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, str(BENCH / script), "--smoke", *_database_options(script)], cwd=ROOT,
                          env=env | {"TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S,
                          check=False)  # fmt: skip
    return done, time.monotonic() - began


@pytest.fixture(scope="module")
def smoke_runs(request, tmp_path_factory):
    """Every script's smoke run, SMOKE_AT_ONCE at a time in the background from the first test on (most of a
    run is waiting: for sshd, a worker, beat, fio), each in a TMPDIR of its own; SQLite runs start from one
    migrated database, PostgreSQL runs are created as copies of one (CREATE DATABASE ... TEMPLATE)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    pg_template, made = _smoke_template(env, tmp_path_factory)
    pool = ThreadPoolExecutor(max_workers=SMOKE_AT_ONCE)
    runs = {}
    # Only the scripts whose test this session runs: -k may have left some out, and a shared one (a script that
    # takes no database) is claimed here, ahead of its test, so that no other session of ./bw test runs it too.
    chosen = {item.callspec.params["script"] for item in request.session.items
              if item.originalname == "test_the_bench_script_runs_at_smoke_size_and_prints_its_figures"
              and sharing.claim(item)}  # fmt: skip
    for script in sorted(chosen, key=lambda name: name not in SLOWEST):
        if not _missing(script):
            tmp = tmp_path_factory.mktemp(Path(script).stem)
            runs[script] = (pool.submit(_smoke, script, env, tmp), tmp)
    yield runs
    pool.shutdown(wait=True, cancel_futures=True)
    if made:
        benchkit.drop_pg_database(f"{_pg_server()}/postgres", pg_template)


def _smoke_template(env: dict[str, str], tmp_path_factory: Any) -> tuple[str, bool]:
    """The migrated database the smoke runs copy (its PostgreSQL name, and whether it was made here), set in `env`:
    ./bw test's own template of this session's database (BENCHWEB_TEST_TEMPLATE_SQLITE / _PG), else one migrated
    here (pytest run by hand)."""
    postgres = connection.vendor == "postgresql"
    given = os.environ.get("BENCHWEB_TEST_TEMPLATE_PG" if postgres else "BENCHWEB_TEST_TEMPLATE_SQLITE", "")
    if given:
        env["BENCHWEB_BENCH_PG_TEMPLATE" if postgres else "BENCHWEB_BENCH_SQLITE_TEMPLATE"] = given
        return (given if postgres else ""), False
    template = tmp_path_factory.mktemp("template")
    pg_template = f"bw_smoke_template_{os.getpid()}" if postgres else ""
    if pg_template:
        benchkit.create_pg_database(f"{_pg_server()}/postgres", pg_template)
        url = f"{_pg_server()}/{pg_template}"
        env["BENCHWEB_BENCH_PG_TEMPLATE"] = pg_template
    else:
        url = f"sqlite:///{template / 'benchweb.sqlite3'}"
        env["BENCHWEB_BENCH_SQLITE_TEMPLATE"] = str(template / "benchweb.sqlite3")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True,
                   env=env | {"DATABASE_URL": url, "BENCHWEB_VAR_DIR": str(template)}, timeout=300)  # fmt: skip
    return pg_template, bool(pg_template)


# Each script runs in one session of ./bw test, as the other slow tests do: one that writes its rows in its own SQL
# runs on SQLite in one run and on PostgreSQL in another, whichever session claims it.
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_bench_script_runs_at_smoke_size_and_prints_its_figures(script, smoke_runs):
    for what in _missing(script):
        _require(what)
    future, tmp = smoke_runs[script]
    done, spent = future.result()
    said = f"exit {done.returncode} after {spent:.0f} s\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert done.returncode == 0, said
    assert "smoke run: measured and reported" in done.stderr, said
    if script == "fleet_sites.py":
        # The smoke's kill happened and was measured: a trace the bench could not read once made it never kill.
        assert "kill -9 of worker" in done.stdout and "jobs.collect_run" in done.stdout, said
    # Its figures: lines with numbers in them, on standard output.
    assert len([line for line in done.stdout.splitlines() if re.search(r"\d", line)]) >= 1, said
    assert not list(tmp.iterdir()), f"{script} left {sorted(p.name for p in tmp.iterdir())} behind"


def test_a_process_tree_s_cpu_counts_what_a_live_child_has_reaped():
    """bench/fanout.py printed 0.0 CPU-s for the target's sshd: a worker's connection lives on, and its
    process reaps the sessions' shells, so the listener's own children's times stay 0 (issue 29)."""
    import psutil

    # A listener whose child (the connection) lives on after reaping a grandchild that burned ~0.5 CPU-s.
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    connection_code = f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {burn!r}])\n" \
                      "print('reaped', flush=True)\ntime.sleep(60)"  # fmt: skip
    listener_code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {connection_code!r}])"
    listener = subprocess.Popen([sys.executable, "-c", listener_code], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "reaped"
        root = psutil.Process(listener.pid)
        own = root.cpu_times()
        assert own.children_user + own.children_system == 0  # what the meter counted before
        assert start_precision.tree_cpu_s(root) >= 0.45
    finally:
        for process in psutil.Process(listener.pid).children(recursive=True):
            process.kill()
        listener.kill()
        listener.wait()
