"""The persistent session per host (jobs/sessions.py) and the SFTP-only looks at a run (jobs/remote/looking.py),
against a real sshd: one login for many users, a new one when the connection dies or the credential changes, commands
from many threads at once on one connection, and what a look says for each state a run directory can be in."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from jobs import remote, runners, sessions, ssh
from tests.sshd import TestSshd

pytestmark = pytest.mark.slow


def _logins(server: TestSshd) -> int:
    return server.handle.log().count("Accepted publickey for ")


def test_many_threads_share_one_login_and_a_changed_credential_opens_another(sshd_factory, tmp_path: Path) -> None:
    server = sshd_factory()
    pool = sessions.Pool()
    target = server.target()
    key = sessions.key_of("host 1", target)
    results: list[bytes] = []

    def work() -> None:
        with pool.session(key, target) as conn:
            results.append(conn.run("echo $PPID; sleep 0.3", timeout=30).stdout)

    # More commands at once than OpenSSH's MaxSessions (10) allows on one connection: they queue, none fails.
    threads = [threading.Thread(target=work) for _ in range(14)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 14 and pool.logins == 1 and _logins(server) == 1
    # Another credential (here: the same key, another passphrase field) is another connection, never a reuse.
    other = replace(target, passphrase="")
    assert sessions.key_of("host 1", other) == key  # an empty passphrase is no passphrase
    changed = replace(target, username=target.username, port=target.port, private_key=target.private_key + "\n")
    with pool.session(sessions.key_of("host 1", changed), changed) as conn:
        assert conn.run("true").exit_status == 0
    assert pool.logins == 2 and pool.open_count() == 2
    pool.close_all()


def test_a_dropped_connection_is_forgotten_and_the_next_session_logs_in_again(sshd_factory) -> None:
    server = sshd_factory()
    pool = sessions.Pool()
    target = server.target()
    key = sessions.key_of(1, target)

    def kill_sessions() -> None:
        for child in psutil.Process(server.handle.process.pid).children():
            child.kill()

    # Dropped while in use: that user gets the error, and the pool forgets the connection.
    with pytest.raises(ssh.SSHError) as failed, pool.session(key, target) as conn:
        assert conn.list_dir("/") is not None
        kill_sessions()
        conn.run("sleep 5", timeout=30)
    assert failed.value.reason == "channel" and pool.open_count() == 0
    with pool.session(key, target) as conn:
        assert conn.list_dir("/") is not None
    # Dropped while idle: the next user does not even see it, it logs in again.
    kill_sessions()
    time.sleep(0.5)
    with pool.session(key, target) as conn:
        assert conn.list_dir("/") is not None
    assert pool.logins == 3 and _logins(server) == 3
    pool.close_all()


def test_an_idle_connection_is_closed(sshd: TestSshd) -> None:
    pool = sessions.Pool(idle_close_s=0.2)
    target = sshd.target()
    with pool.session("a", target) as conn:
        first = conn
    time.sleep(0.4)
    with pool.session("b", target):
        pass
    assert not first.is_active() and pool.open_count() == 1
    pool.close_all()


# ------------------------------------------------------------------------------------------------- looks


def _run_dir(base: Path, *, launched: bool = True) -> Path:
    run_dir = base / "runs" / str(uuid.uuid4())
    run_dir.mkdir(parents=True)
    (base / "runs" / "done").mkdir(exist_ok=True)
    if launched:
        (run_dir / "launched").mkdir()
    return run_dir


def test_a_look_tells_each_state_without_a_command(sshd: TestSshd, tmp_path: Path) -> None:
    with ssh.connect(sshd.target()) as conn:
        vanished = tmp_path / "runs" / str(uuid.uuid4())
        assert remote.look(conn, str(vanished), None) == "vanished"
        assert remote.look(conn, str(_run_dir(tmp_path, launched=False)), None) == "unlaunched"
        assert remote.look(conn, str(_run_dir(tmp_path)), None) == "starting"
        running = _run_dir(tmp_path)
        (running / "run.sh").write_text("sleep 30\n")
        wrapper = subprocess.Popen(["sh", "run.sh"], cwd=running)
        try:
            stats: list[str] = []
            stat = conn.size_of
            conn.size_of = lambda path: stats.append(path) or stat(path)  # type: ignore[method-assign]
            assert remote.look(conn, str(running), wrapper.pid) == "running"
            assert stats == []  # a running wrapper is one read of its /proc entry, not of the run's files
            # A pid that is now another program's is not the wrapper.
            assert remote.look(conn, str(running), 1) == "dead"
        finally:
            wrapper.kill()
            wrapper.wait()
        assert remote.look(conn, str(running), wrapper.pid) == "dead"
        (running / "status").write_text("0\n")
        assert remote.look(conn, str(running), wrapper.pid) == "finished"
        # The done directory lists the ended runs' UUIDs, and nothing that is not one.
        (tmp_path / "runs" / "done" / running.name).touch()
        (tmp_path / "runs" / "done" / "not-a-uuid").touch()
        assert remote.finished_runs(conn, str(tmp_path / "runs")) == {running.name}
        assert remote.finished_runs(conn, str(tmp_path / "nowhere" / "runs")) is None


def test_the_output_is_read_from_where_the_last_look_stopped(sshd: TestSshd, tmp_path: Path) -> None:
    output = tmp_path / "result.json"
    with ssh.connect(sshd.target()) as conn:
        assert remote.read_output(conn, str(output), 0) == (0, b"")
        output.write_bytes(b"first ")
        offset, data = remote.read_output(conn, str(output), 0)
        assert (offset, data) == (6, b"first ")
        with output.open("ab") as handle:
            handle.write(b"second")
        assert remote.read_output(conn, str(output), offset) == (12, b"second")
        assert remote.read_output(conn, str(output), 12) == (12, b"")
        # More new bytes than the limit: the last ones only, starting mid-file (the caller starts afresh).
        output.write_bytes(b"x" * 100 + b"tail")
        assert remote.read_output(conn, str(output), 12, max_bytes=10) == (104, b"xxxxxxtail")


def test_the_kept_tail_is_the_last_two_status_documents() -> None:
    doc = b'{\n  "fio version" : "fio-3.33",\n  "jobs" : []\n}\n'
    assert runners.progress_tail(b"junk" + doc + doc + doc[:10]) == doc + doc + doc[:10]
    assert runners.progress_tail(b"junk" + doc + doc.replace(b"3.33", b"3.34") + doc) == (
        doc.replace(b"3.33", b"3.34") + doc
    )
    assert runners.progress_tail(b"no documents at all", keep_bytes=5) == b"t all"


def test_a_wrapper_leaves_its_done_marker_after_its_status_and_the_cleanup_removes_it(
    sshd: TestSshd, tmp_path: Path
) -> None:
    base = tmp_path / "runs"
    run_uuid = str(uuid.uuid4())
    run_dir = base / run_uuid
    run_dir.mkdir(parents=True)
    (base / "done").mkdir()
    plan = remote.Plan(run_uuid=run_uuid, run_dir=str(run_dir), lock_path=str(tmp_path / "x.lock"), argv=["true"],
                       limit_s=60, files={})  # fmt: skip
    (run_dir / "run.sh").write_text(remote.wrapper_script(plan))
    subprocess.run(["sh", "run.sh"], cwd=run_dir, check=True, timeout=30)
    assert (run_dir / "status").read_text() == "0\n"
    assert (base / "done" / run_uuid).exists()
    # `ended` holds what the four files hold, in one: a collection reads one file instead of four.
    files = [(run_dir / name).read_text().strip() for name in ("status", "pid", "started", "finished")]
    assert (run_dir / "ended").read_text() == " ".join(files) + "\n"
    with ssh.connect(sshd.target()) as conn:
        final = remote.final_state(conn, str(run_dir))
        assert (final.state, final.exit_status, final.pid) == ("finished", 0, int(files[1]))
        assert (final.started_epoch, final.finished_epoch) == (float(files[2]), float(files[3]))
        assert final.finished_epoch >= final.started_epoch
        # A wrapper older than `ended`, or an `ended` cut short: the four files give the same answer.
        for ended in (None, "0 123 4"):
            if ended is None:
                (run_dir / "ended").unlink()
            else:
                (run_dir / "ended").write_text(ended)
            assert remote.final_state(conn, str(run_dir)) == final
        remote.cleanup(conn, str(run_dir), None, base=str(base), run_uuid=run_uuid)
    assert not run_dir.exists() and not (base / "done" / run_uuid).exists()
