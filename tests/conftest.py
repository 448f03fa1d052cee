from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import signals
from django.db import close_old_connections
from django.test import Client

from jobs.models import Credential, Disk, Host, Membership, Team
from jobs.teams import membership as teams
from tests import sharing
from tests.loops import Lab, require_loop_devices
from tests.stacks import free_port, running_stack, stack_env

# Tests sign up and sign in hundreds of users. The production hasher (PBKDF2) is slow by design, about half a second
# a password on this machine, which proves nothing about benchweb and cost the suite minutes; Django's documentation
# advises a fast hasher for tests. Processes the tests start (`./bw run`, workers) keep the production one.
settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _emptied_by_delete() -> None:
    """A test that commits (transaction=True, a live server, a worker) is followed by Django's flush. On PostgreSQL
    that is one TRUNCATE of every table: some 0.4 s, as PostgreSQL gives each table new files, against 20 ms for
    a DELETE of the few rows a test leaves. The tests' PostgreSQL flushes with DELETE, as SQLite's always does (its
    foreign keys are checked at commit, so the order does not matter); benchweb itself never flushes."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):  # type: ignore[no-untyped-def]
        if reset_sequences or allow_cascade:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign]


if any(database["ENGINE"] == "django.db.backends.postgresql" for database in settings.DATABASES.values()):
    _emptied_by_delete()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """PostgreSQL's test database named for this process, as SQLite's test file is (benchweb/settings.py), or for
    this session of ./bw test (BENCHWEB_TEST_DB_SUFFIX, both databases): two test runs on one server at once (two
    checkouts, or CI beside a developer) would otherwise create, use and drop the same test_benchweb under each
    other."""
    suffix = os.environ.get("BENCHWEB_TEST_DB_SUFFIX")
    for database in settings.DATABASES.values():
        test = database.setdefault("TEST", {})
        if database["ENGINE"] != "django.db.backends.sqlite3":
            test["NAME"] = f"{test.get('NAME') or 'test_' + database['NAME']}_{suffix or os.getpid()}"
        elif suffix:  # the file ./bw test copied from its template, beside the one settings.py names by pid
            test["NAME"] = str(Path(test["NAME"]).with_name(f"test-{suffix}.sqlite3"))


@pytest.fixture(scope="session")
def django_db_keepdb(request: pytest.FixtureRequest) -> bool:
    """./bw test made this session's test database already, a copy of a template it migrated once for all the
    sessions (BENCHWEB_TEST_DB_MADE=1, named by BENCHWEB_TEST_DB_SUFFIX): kept as made, Django finds it and its
    migrate has nothing to apply; ./bw test drops it at its end. Otherwise pytest-django's --reuse-db decides."""
    return os.environ.get("BENCHWEB_TEST_DB_MADE") == "1" or bool(request.config.getvalue("reuse_db"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """BENCHWEB_TEST_ONLY_SHARED=1: this session runs shared tests only (see pytest_runtestloop)."""
    if os.environ.get("BENCHWEB_TEST_ONLY_SHARED") != "1":
        return
    elsewhere = [item for item in items if not sharing.shared(item)]
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = [item for item in items if sharing.shared(item)]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """Share tests between the sessions `./bw test` runs at once (one per database, and more that run shared tests
    only) by claiming them as they come.

    BENCHWEB_TEST_CLAIMS names a directory the sessions share. A quick test that uses the database checks what
    benchweb does with it, so every full session runs every one. The others are shared: a slow test checks
    benchweb's processes (a real sshd, fio, Celery workers, Chromium, the run command) and reads the database as
    the quick ones do, so whichever session is free runs it; a test that uses no database at all (a parser, a
    command line, a migrate in a directory of its own) would prove nothing more in a second session. Each session
    walks the tests in collection order and runs a shared one only if it claims it first (a file made with
    O_EXCL), so the sessions end together whatever each test costs, where a fixed share left one session minutes
    behind the other. A test is claimed just before the one before it starts: pytest must know which test comes
    next to keep the fixtures they share."""
    if sharing.claims_dir() is None or session.config.option.collectonly or session.testsfailed:
        return None  # pytest's own loop
    mine = (item for item in session.items if sharing.claim(item))
    item = next(mine, None)
    ran = 0
    while item is not None:
        following = next(mine, None)
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
        ran += 1
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
        item = following
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"{len(session.items) - ran} shared tests ran in the other sessions of ./bw test")
    return True


@pytest.fixture
def keep_the_test_connection() -> Iterator[None]:
    """As Django's test client does: a request through the WSGI handler (Schemathesis calls the app in process)
    must not close the test's database connection at its end, or the objects of the test's transaction would be
    gone for the next request."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def owner(db) -> User:
    user = User.objects.create_user("olga", password="a-long-test-password-1")
    teams.place_new_user(user)
    return user


@pytest.fixture
def team(owner) -> Team:
    return Membership.objects.get(user=owner).team


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def credential(team) -> Credential:
    credential = Credential(team=team, name="bench key", kind=Credential.Kind.PASSWORD)
    credential.set_secret("hunter2-canary-password")
    credential.save()
    return credential


@pytest.fixture
def host(team, credential) -> Host:
    return Host.objects.create(
        team=team, name="vm1", address="127.0.0.1", port=22, username="bench", credential=credential
    )


@pytest.fixture
def disk(host) -> Disk:
    return Disk.objects.create(
        host=host,
        label="data",
        target_path="/data/bench",
        disk_type="custom",
        spec_iops=4000,
        spec_bytes_per_s=100_000_000,
    )


@pytest.fixture
def pair(host: Host) -> tuple[Disk, Disk]:
    """Two disks of one host to compare: a local NVMe and a cloud volume, no limits."""
    return (
        Disk.objects.create(host=host, label="local nvme", target_path="/data/a"),
        Disk.objects.create(host=host, label="cloud volume", target_path="/data/b"),
    )


@pytest.fixture
def stack(tmp_path):
    """`./bw run` started for real on a var dir and a free port of the test's own: (process, var dir, port, env)."""
    var_dir = tmp_path / "var"
    port = free_port()
    env = stack_env(var_dir, port)
    with running_stack(var_dir, env) as process:
        yield process, var_dir, port, env


@pytest.fixture
def fio_installed():
    if shutil.which("fio") is None:
        reason = "fio is not installed (apt-get install fio; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


from tests.browser import *  # noqa: E402, F403  (fixtures: browser, page, screenshot)
from tests.receivers import *  # noqa: E402, F403  (fixtures: smtp_server, smtp_settings, http_receiver, loopback_allowed)
from tests.sshd import *  # noqa: E402, F403  (fixtures: sshd, sshd_target, sshd_factory, other_sshd)
from tests.workers import *  # noqa: E402, F403  (fixtures: broker, worker_factory, worker)

# Loop devices belong to the machine, not to one pytest session. A test that detaches one and attaches another
# file at the same name (a "reboot", tests/disks/test_disk_identity.py) must not have a session running at the same
# time (./bw test runs SQLite and PostgreSQL together) take that device with `losetup -f` in between, or its
# teardown detach the other session's device: sessions take turns with them.
LOOP_DEVICES_LOCK = Path("/run/lock/benchweb-tests-loop-devices.lock")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """Loop devices on files in tmp_path (root only; skips with the reason otherwise), detached afterwards."""
    require_loop_devices()
    with open(LOOP_DEVICES_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lab = Lab(tmp_path)
        try:
            yield lab
        finally:
            lab.close()
