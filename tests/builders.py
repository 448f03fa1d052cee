"""Objects the run and schedule tests share: a team with a host on a test sshd, quick profiles, targets."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psutil
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from jobs.models import Host, Membership, Profile, Run, RunSet, Team
from tests.factories import HostFactory, ProfileFactory, TeamFactory


def team_with_host(sshd, **host_fields) -> tuple[Team, Host]:
    """A team with one host, "loopback", on the test sshd (HostFactory.for_sshd: key stored, host key approved)."""
    team = TeamFactory(name="bench team")
    return team, HostFactory.for_sshd(sshd, **({"team": team, "name": "loopback", "credential__name": "test key"}
                                              | host_fields))  # fmt: skip


# fio's rate cap on a quick profile. Unthrottled, 4k reads from the page cache keep a core busy for the whole
# runtime (1.8 CPU-s of a 3 s run here, against 0.4 at this rate): that proves nothing more, and over the suite's
# two hundred runs it cost ./bw test minutes on a 2-core machine. A test that reads fio's speed gives its own
# extra_options ({} for none), or is a curve, a search or a steady-state run, which go unthrottled.
QUICK_RATE_IOPS = "2000"
_SPEED_READ_BY = ("extra_options", "sweep_axes", "sla_target_us", "ss_metric")


def quick_profile(team: Team, **fields) -> Profile:
    """3 s of 4k random reads on a 16 MiB file with psync and no O_DIRECT, capped at QUICK_RATE_IOPS: quick,
    cheap, and fine on tmpfs."""
    defaults = {
        "team": team, "name": "quick randread", "tool": "fio", "rw": "randread", "block_size_bytes": 4096,
        "iodepth": 1, "jobs": 1, "runtime_s": 3, "time_based": True, "ioengine": "psync", "direct": False,
        "size_bytes": 16 * 2**20,
    }  # fmt: skip
    if not any(name in fields for name in _SPEED_READ_BY):
        defaults["extra_options"] = {"rate_iops": QUICK_RATE_IOPS}
    return ProfileFactory(**(defaults | fields))


# A run, or a set of runs: what wait_final waits for.
Final = TypeVar("Final", Run, RunSet)


def target_dir(tmp_path: Path) -> str:
    target = tmp_path / "bench"
    target.mkdir(parents=True, exist_ok=True)
    return str(target)


def wait_final(run: Final, timeout: float = 90) -> Final:
    """Poll the database until the run (or set of runs) reaches a final state; fail saying where it got stuck."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_final:
            return run
        time.sleep(0.3)
    members = ""
    if isinstance(run, RunSet):  # where each member got to, to tell a lost launch from a stuck run
        members = "; its members: " + ", ".join(
            f"{member.pk} {member.state} ({member.explanation})" for member in run.members.order_by("set_index")
        )
    raise AssertionError(f"{run} stayed {run.state} ({run.explanation}) for {timeout} s{members}")


def wait_state(run: Run, state: str, timeout: float = 60) -> Run:
    """Poll the database until the run reaches `state`; fail at once if it ends in another."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.state == state:
            return run
        assert not run.is_final, f"run ended {run.state}: {run.explanation}"
        time.sleep(0.2)
    raise AssertionError(f"run never reached {state}; it is {run.state} ({run.explanation})")


def rerun_of(text: str, seconds_later: int) -> str:
    """fio JSON output as if the same job ran again seconds_later: the same numbers in another output (benchweb
    refuses the same output twice on one disk as a duplicate)."""
    stamp = re.search(r'"timestamp" : ([0-9]+)', text)
    assert stamp, "rerun_of takes fio JSON output"
    return text.replace(stamp.group(0), f'"timestamp" : {int(stamp.group(1)) + seconds_later}', 1)


def wrappers_of(run: Run) -> set[int]:
    """Pids of the run's wrappers: run.sh started in its run directory, each leading a session of its own (every
    launch starts it under setsid). The wrapper's `$(date ...)` forks a subshell that shows the same command line
    until it execs; it is not a second start, and it leads no session."""
    found = set()
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if (
                "run.sh" in (process.info["cmdline"] or [])
                and str(run.uuid) in process.cwd()
                and is_session_leader(process)
            ):
                found.add(process.pid)
        except psutil.Error:
            continue
    return found


def is_session_leader(process: psutil.Process) -> bool:
    try:
        return os.getsid(process.pid) == process.pid
    except OSError:
        return False


@contextmanager
def own_database() -> Iterator[None]:
    """While the block runs, the default connection is to a new, empty database of its own (a SQLite file, or a
    database made on the same PostgreSQL server), dropped after. A migration test migrates it forward from nothing
    to the migration before the one it checks, then that one: no walk of the test database's whole schema back
    and forth (some 20 s of CPU each, and more with every migration added), and nothing to put back."""
    saved = dict(connection.settings_dict)
    vendor = connection.vendor
    connection.close()
    folder = Path(tempfile.mkdtemp(prefix="bw-migration-"))
    name = str(folder / "own.sqlite3") if vendor == "sqlite" else f"{saved['NAME'][:50]}_own_{os.getpid()}"
    if vendor != "sqlite":
        _pg_admin(saved, f'CREATE DATABASE "{name}"')
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        shutil.rmtree(folder, ignore_errors=True)
        if vendor != "sqlite":
            _pg_admin(saved, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_admin(settings: dict[str, Any], statement: str) -> None:
    import psycopg

    with psycopg.connect(dbname="postgres", host=settings["HOST"] or None, port=settings["PORT"] or None,
                         user=settings["USER"] or None, password=settings["PASSWORD"] or None,
                         autocommit=True) as admin:  # fmt: skip
        admin.execute(statement)  # type: ignore[arg-type]  # a name of ours, never the user's


def disk_at_migration(target: list[tuple[str, str]]) -> tuple[Any, Any]:
    """The database migrated to `target` (in a test: forward from nothing, in own_database()), and a team and a
    custom disk of 4,000 IOPS made with the models of then: (the historical apps, the disk)."""
    MigrationExecutor(connection).migrate(target)
    old = MigrationExecutor(connection).loader.project_state(target).apps
    team = old.get_model("jobs", "Team").objects.create(name="t")
    host = old.get_model("jobs", "Host").objects.create(team=team, name="h", address="x", username="u")
    disk = old.get_model("jobs", "Disk").objects.create(team=team, host=host, label="d", target_path="/d",
                                                        disk_type="custom", spec_iops=4000)  # fmt: skip
    return old, disk


def owner_client_of(team: Team, name: str = "owner") -> Client:
    """A browser client logged in as a new owner of `team`."""
    user = User.objects.create_user(name, email=f"{name}@example.com")
    Membership.objects.create(user=user, team=team, role=Membership.Role.OWNER)
    client = Client()
    client.force_login(user)
    return client
