"""jobs.ssh against a real OpenSSH server with real paramiko: pinning, logins, commands, files, time limits."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import paramiko
import psutil
import pytest

from jobs import ssh, sshd_local
from tests.sshd import PasswordAccount, TestSshd

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def conn(sshd: TestSshd) -> Iterator[ssh.Connection]:
    with ssh.connect(sshd.target()) as connection:
        yield connection


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP port that accepts connections and says nothing unless a test makes it."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def _wait_for_log(server: TestSshd, text: str, timeout: float = 5) -> str:
    deadline = time.monotonic() + timeout
    while text not in (log := server.handle.log()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return log


def _refusal(target: ssh.Target, **kwargs: float) -> ssh.SSHError:
    with pytest.raises(ssh.SSHError) as caught:
        ssh.connect(target, **kwargs).close()
    return caught.value


# ---------------------------------------------------------------------------------------------- host keys


def test_a_scan_reports_the_key_and_fingerprint_that_ssh_keygen_reports(sshd: TestSshd) -> None:
    scanned = ssh.scan_host_key(sshd.address, sshd.port)

    assert scanned == sshd.host_key
    assert scanned.fingerprint.startswith("SHA256:")
    assert not scanned.fingerprint.endswith("=")


def test_a_scan_prefers_ed25519_like_openssh_when_the_host_has_several_keys(
    sshd_factory: Callable[..., TestSshd],
) -> None:
    server = sshd_factory(host_key_types=("rsa", "ecdsa", "ed25519"))

    assert ssh.scan_host_key(server.address, server.port) == server.host_key_of_type("ssh-ed25519")


def test_a_host_pinned_to_its_rsa_key_is_verified_with_that_key_though_it_prefers_another(
    sshd_factory: Callable[..., TestSshd],
) -> None:
    server = sshd_factory(host_key_types=("rsa", "ed25519"))

    with ssh.connect(server.target(host_key=server.host_key_of_type("ssh-rsa"))) as connection:
        assert connection.run("true").exit_status == 0


def test_an_unknown_host_key_is_refused_before_anything_is_sent(sshd: TestSshd, listener: socket.socket) -> None:
    target = sshd.target(port=listener.getsockname()[1], host_key=None)

    error = _refusal(target)

    assert error.reason == "host_key_unknown"
    assert "scan and approve it first" in str(error)
    listener.settimeout(0.2)
    with pytest.raises(TimeoutError):
        listener.accept()


def test_a_changed_host_key_is_refused_without_attempting_a_login(sshd: TestSshd, other_sshd: TestSshd) -> None:
    # The key would be accepted, so any login attempt would show in the log as "Accepted".
    target = other_sshd.target(host_key=sshd.host_key)

    error = _refusal(target)

    assert error.reason == "host_key_changed"
    assert sshd.host_key.fingerprint in str(error)
    assert other_sshd.host_key.fingerprint in str(error)
    assert "Nothing was sent" in str(error)
    log = _wait_for_log(other_sshd, "[preauth]")
    assert "Connection from 127.0.0.1" in log
    for sign_of_a_login in ("Accepted", "Failed", "Postponed", "authenticating user", "Invalid user"):
        assert sign_of_a_login not in log


def test_a_host_that_no_longer_offers_the_approved_key_type_is_refused_as_changed(
    sshd: TestSshd, sshd_factory: Callable[..., TestSshd]
) -> None:
    rsa_only = sshd_factory(host_key_types=("rsa",))

    error = _refusal(rsa_only.target(host_key=sshd.host_key))

    assert error.reason == "host_key_changed"
    assert rsa_only.host_key.fingerprint in str(error)
    assert "Accepted" not in rsa_only.handle.log()


def test_an_approved_key_of_a_type_benchweb_cannot_verify_is_refused_before_connecting(sshd: TestSshd) -> None:
    target = sshd.target(host_key=ssh.HostKey("ssh-dss", "AAAAB3NzaC1kc3M=", "SHA256:x"))

    assert _refusal(target).reason == "host_key_unknown"


# ------------------------------------------------------------------------------------------------- logins


def test_a_wrong_private_key_fails_with_a_helpful_message_that_does_not_contain_the_key(
    sshd: TestSshd, tmp_path: Path
) -> None:
    stranger, _ = sshd_local.generate_user_key(tmp_path)

    error = _refusal(sshd.target(private_key=stranger))

    assert error.reason == "auth_failed"
    assert "authorized_keys" in str(error)
    for line in stranger.splitlines()[1:-1]:
        assert line not in str(error)


def test_an_encrypted_key_needs_its_passphrase_and_logs_in_with_it(sshd: TestSshd, tmp_path: Path) -> None:
    private_key, public_key = sshd_local.generate_user_key(tmp_path, passphrase="correct horse")
    sshd.handle.authorize(public_key)

    without = _refusal(sshd.target(private_key=private_key))
    wrong = _refusal(sshd.target(private_key=private_key, passphrase="battery staple"))
    with ssh.connect(sshd.target(private_key=private_key, passphrase="correct horse")) as connection:
        result = connection.run("echo in")

    assert (without.reason, wrong.reason) == ("bad_credential", "bad_credential")
    assert "needs its passphrase" in str(without)
    assert "battery staple" not in str(wrong)
    assert result.stdout == b"in\n"


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa"])
def test_ecdsa_and_rsa_keys_log_in_as_well_as_ed25519(sshd: TestSshd, tmp_path: Path, key_type: str) -> None:
    private_key, public_key = sshd_local.generate_user_key(tmp_path, key_type=key_type)
    sshd.handle.authorize(public_key)

    with ssh.connect(sshd.target(private_key=private_key)) as connection:
        assert connection.run("true").exit_status == 0


def test_text_that_is_not_a_private_key_is_a_bad_credential() -> None:
    with pytest.raises(ssh.SSHError) as caught:
        ssh.load_private_key("-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----\n")

    assert caught.value.reason == "bad_credential"
    assert "ssh-keygen -p" in str(caught.value)


def test_a_password_logs_in_where_the_host_allows_passwords(
    sshd_factory: Callable[..., TestSshd], password_user: PasswordAccount
) -> None:
    server = sshd_factory(password_authentication=True)
    target = server.target(username=password_user.name, private_key=None, password=password_user.password)

    with ssh.connect(target) as connection:
        result = connection.run("id -un")
    wrong = _refusal(ssh.Target(**{**vars(target), "password": "not-" + password_user.password}))

    assert result.stdout.decode().strip() == password_user.name
    assert wrong.reason == "auth_failed"
    assert password_user.password not in str(wrong)


def test_a_password_for_a_host_that_accepts_only_keys_says_what_it_accepts(sshd: TestSshd) -> None:
    error = _refusal(sshd.target(private_key=None, password="canary-secret-123"))

    assert error.reason == "auth_failed"
    assert "publickey" in str(error)
    assert "canary-secret-123" not in str(error)


def _session_checking_the_login(server: TestSshd, username: str, timeout: float = 10) -> psutil.Process:
    """The sshd process serving a connection, once it names `username`: sshd retitles its monitor
    "<user> [priv]" when the first login request arrives."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in psutil.Process(server.handle.process.pid).children():
            with contextlib.suppress(psutil.NoSuchProcess):
                if f"{username} [priv]" in " ".join(child.cmdline()):
                    return child
        time.sleep(0.01)
    raise AssertionError(f"no sshd session for {username} appeared within {timeout} s")


def test_a_session_killed_during_the_login_is_a_closed_connection_not_a_refused_credential(
    sshd_factory: Callable[..., TestSshd], password_user: PasswordAccount
) -> None:
    # Hashed with 5 million SHA-512 rounds, the password keeps sshd's monitor busy for about two seconds checking
    # it: a window wide enough to kill the session in the middle of the login (the session is found within 10 ms),
    # as an operator or the OOM killer might. chpasswd pays the same hashing once more, so more rounds only wait.
    account = f"{password_user.name}:{password_user.password}\n"
    subprocess.run(["chpasswd", "-c", "SHA512", "-s", "5000000"], input=account, text=True, check=True)
    server = sshd_factory(password_authentication=True)
    target = server.target(username=password_user.name, private_key=None, password=password_user.password)
    errors: list[ssh.SSHError] = []
    login = threading.Thread(target=lambda: errors.append(_refusal(target, timeout=30)))
    login.start()

    session = _session_checking_the_login(server, password_user.name)
    for process in [session, *session.children(recursive=True)]:
        process.kill()
    login.join(30)

    assert len(errors) == 1
    assert errors[0].reason == "unreachable"
    assert "closed the connection during login, before answering the password" in str(errors[0])
    assert "refused" not in str(errors[0])


def test_a_server_that_drops_the_connection_when_the_key_arrives_is_not_said_to_refuse_the_key(
    sshd: TestSshd, listener: socket.socket
) -> None:
    # A real sshd checks a key in a millisecond, too fast to kill it in between; paramiko's server mode (a real
    # SSH server) stands in for it, with the session's host key so that the pin holds, and hangs up at the key.
    host_key = paramiko.Ed25519Key.from_private_key_file(str(sshd.handle.workdir / "ssh_host_ed25519_key"))

    class HangUpAtTheKey(paramiko.ServerInterface):
        def __init__(self, peer: socket.socket) -> None:
            self.peer = peer

        def get_allowed_auths(self, username: str) -> str:
            return "publickey"

        def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
            self.peer.shutdown(socket.SHUT_RDWR)
            return paramiko.AUTH_FAILED

    def serve() -> None:
        peer, _ = listener.accept()
        server = paramiko.Transport(peer)
        server.add_server_key(host_key)
        server.start_server(server=HangUpAtTheKey(peer))

    threading.Thread(target=serve, daemon=True).start()

    error = _refusal(sshd.target(port=listener.getsockname()[1]), timeout=10)

    assert error.reason == "unreachable"
    assert "closed the connection during login, before answering the private key" in str(error)
    assert "refused" not in str(error)


def test_a_target_without_any_credential_is_refused_before_connecting(sshd: TestSshd) -> None:

    assert _refusal(sshd.target(private_key=None)).reason == "bad_credential"


def test_a_target_never_shows_its_secrets_in_its_repr(sshd: TestSshd) -> None:
    target = sshd.target(password="canary-secret-123", passphrase="canary-passphrase")

    assert "canary" not in repr(target)
    assert "PRIVATE KEY" not in repr(target)


# ---------------------------------------------------------------------------------------- unreachable hosts


def test_a_closed_port_is_unreachable_at_once() -> None:
    key = ssh.HostKey("ssh-ed25519", "AAAA", "SHA256:x")
    target = ssh.Target("127.0.0.1", sshd_local.free_port(), "nobody", key, password="x")
    started = time.monotonic()

    error = _refusal(target, timeout=5)

    assert error.reason == "unreachable"
    assert "refused the connection" in str(error)
    assert time.monotonic() - started < 1


def test_a_server_that_never_sends_a_banner_times_out_within_the_connect_timeout(
    sshd: TestSshd, listener: socket.socket
) -> None:
    target = sshd.target(port=listener.getsockname()[1])
    started = time.monotonic()

    error = _refusal(target, timeout=1)

    assert error.reason == "timeout"
    assert time.monotonic() - started < 2.5


def test_a_deadline_shortens_the_connect_timeout(sshd: TestSshd, listener: socket.socket) -> None:
    target = sshd.target(port=listener.getsockname()[1])
    started = time.monotonic()

    error = _refusal(target, timeout=30, deadline=time.monotonic() + 0.5)

    assert error.reason == "timeout"
    assert time.monotonic() - started < 2


def test_a_port_that_does_not_speak_ssh_is_reported_as_such(sshd: TestSshd, listener: socket.socket) -> None:
    def answer_like_a_web_server() -> None:
        peer, _ = listener.accept()
        with peer:
            peer.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    threading.Thread(target=answer_like_a_web_server, daemon=True).start()

    error = _refusal(sshd.target(port=listener.getsockname()[1]), timeout=5)

    assert error.reason == "unreachable"
    assert "check that this port is an SSH server" in str(error)


# ------------------------------------------------------------------------------------------------ commands


def test_a_command_returns_its_output_and_exit_status(conn: ssh.Connection) -> None:
    result = conn.run("echo out; echo err >&2; exit 3")

    assert result == ssh.CommandResult(3, b"out\n", b"err\n")


def test_large_output_on_stdout_and_stderr_at_once_is_read_in_full(conn: ssh.Connection) -> None:
    result = conn.run("head -c 20000000 /dev/zero | base64 & head -c 20000000 /dev/zero | base64 >&2; wait", timeout=20)

    expected = len(base64.encodebytes(bytes(20_000_000)))
    assert (len(result.stdout), len(result.stderr)) == (expected, expected)
    assert result.exit_status == 0


def test_stdin_reaches_the_command_while_its_output_is_read(conn: ssh.Connection) -> None:
    payload = os.urandom(8 * 2**20)

    echoed = conn.run("cat", stdin=payload, timeout=20)
    counted = conn.run("wc -c", stdin=b"12345")

    assert echoed.stdout == payload
    assert counted.stdout.strip() == b"5"


def test_a_command_gets_end_of_file_on_stdin_when_none_is_given(conn: ssh.Connection) -> None:
    assert conn.run("cat", timeout=5).stdout == b""


def test_a_command_that_overruns_its_timeout_raises_and_leaves_the_connection_usable(conn: ssh.Connection) -> None:
    started = time.monotonic()

    with pytest.raises(ssh.SSHError) as caught:
        conn.run("sleep 30", timeout=1)

    assert caught.value.reason == "timeout"
    assert time.monotonic() - started < 2.5
    assert conn.run("echo still here").stdout == b"still here\n"


def test_a_command_that_detaches_a_background_job_returns_without_waiting_for_it(conn: ssh.Connection) -> None:
    # Like ssh(1), run waits for end-of-file: a background job must not hold the command's output open.
    started = time.monotonic()

    result = conn.run("sleep 3 </dev/null >/dev/null 2>&1 & echo started", timeout=5)

    assert result.stdout == b"started\n"
    assert time.monotonic() - started < 2


def test_a_command_killed_by_a_signal_reports_128_plus_the_signal_and_the_next_command_runs(
    conn: ssh.Connection,
) -> None:
    assert conn.run("kill -9 $$").exit_status == 128 + 9
    assert conn.run("echo next").stdout == b"next\n"


def test_a_command_given_stdin_and_killed_by_a_signal_reports_exit_status_minus_one(conn: ssh.Connection) -> None:
    assert conn.run("kill -9 $$", stdin=b"x").exit_status == -1


def _parent_of_command(conn: ssh.Connection) -> int:
    return int(conn.run("echo $PPID").stdout)


def test_commands_on_one_connection_run_in_one_long_lived_shell_not_a_session_each(conn: ssh.Connection) -> None:
    parents = {_parent_of_command(conn) for _ in range(10)}

    assert len(parents) == 1, parents
    (shell,) = parents
    assert Path(f"/proc/{shell}/cmdline").read_bytes().split(b"\0")[0] == b"/bin/sh"


def test_exit_and_syntax_errors_end_only_their_own_command_not_the_shell(conn: ssh.Connection) -> None:
    shell = _parent_of_command(conn)

    assert conn.run("exit 5").exit_status == 5
    unbalanced = conn.run("echo 'never closed")
    assert unbalanced.exit_status == 2 and b"never closed" not in unbalanced.stdout
    assert conn.run("cat; echo after").stdout == b"after\n"  # its stdin is /dev/null, not the next commands
    assert _parent_of_command(conn) == shell


def test_output_that_looks_like_an_end_mark_is_returned_intact(conn: ssh.Connection) -> None:
    result = conn.run(r"printf '\0%s\0%d\0' deadbeef 0; printf '\0x\0' >&2; exit 4")

    assert result == ssh.CommandResult(4, b"\0deadbeef\0" + b"0\0", b"\0x\0")


def test_concurrent_commands_each_get_their_own_output(conn: ssh.Connection) -> None:
    def echo(n: int) -> bytes:
        return conn.run(f"for i in 1 2 3 4 5 6 7 8; do echo {n}-$i; sleep 0.01; done").stdout

    with ThreadPoolExecutor(max_workers=8) as pool:
        outputs = list(pool.map(echo, range(24)))

    assert outputs == [b"".join(f"{n}-{i}\n".encode() for i in range(1, 9)) for n in range(24)]


def test_a_thread_waiting_for_a_slow_command_sleeps_in_the_channel_instead_of_polling_it(
    conn: ssh.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker holds dozens of threads waiting for commands while a fleet launches: each looks at its channel when
    output comes, or every STDOUT_WAIT_S for stderr's sake, not 200 times a second (as it did). Its output, on both
    streams and across the wait, comes whole."""
    conn.run("true")  # the shell is started
    looks = 0
    ready = paramiko.Channel.recv_ready

    def counted(channel: paramiko.Channel) -> bool:
        nonlocal looks
        looks += 1
        return ready(channel)

    monkeypatch.setattr(paramiko.Channel, "recv_ready", counted)
    result = conn.run("echo before; echo err >&2; sleep 1; echo after")

    assert result == ssh.CommandResult(0, b"before\nafter\n", b"err\n")
    assert looks <= 40, looks  # 1 s of waiting: about 10 looks at 0.1 s; about 200 when it polled every 5 ms


def test_a_shell_killed_on_the_host_is_replaced_by_the_next_command(conn: ssh.Connection) -> None:
    shell = _parent_of_command(conn)

    os.kill(shell, signal.SIGKILL)
    time.sleep(0.5)

    assert conn.run("echo again").stdout == b"again\n"
    assert _parent_of_command(conn) != shell


def test_output_beyond_the_limit_is_refused_instead_of_filling_memory(conn: ssh.Connection) -> None:
    with pytest.raises(ssh.SSHError) as caught:
        conn.run("head -c 3000000 /dev/zero", max_output=2**20)

    assert caught.value.reason == "channel"
    assert conn.run("true").exit_status == 0


@pytest.mark.parametrize("stream", ["", " >&2"])
def test_output_over_the_limit_that_arrives_all_at_once_with_its_end_is_refused_too(
    conn: ssh.Connection, stream: str
) -> None:
    # 2,000 bytes come in one read together with the end marks: the size is checked on a complete answer too.
    with pytest.raises(ssh.SSHError) as caught:
        conn.run(f"head -c 2000 /dev/zero{stream}", max_output=1000)

    assert caught.value.reason == "channel"
    assert conn.run("head -c 1000 /dev/zero", max_output=1000).stdout == b"\0" * 1000


# --------------------------------------------------------------------------------------------------- files


def test_an_sftp_exchange_stuck_on_the_host_does_not_hold_up_the_others(conn: ssh.Connection, tmp_path: Path) -> None:
    # The host's SFTP server opening a FIFO for reading waits for a writer: its channel is stuck until then.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other = tmp_path / "other"
    other.write_bytes(b"x" * 70_000)

    with ThreadPoolExecutor(max_workers=1) as pool:
        stuck = pool.submit(conn.get_file_if_any, str(fifo))
        time.sleep(0.5)
        assert not stuck.done()
        started = time.monotonic()
        assert conn.get_file_if_any(str(other)) == b"x" * 70_000
        assert conn.size_of(str(tmp_path / "missing")) is None
        assert time.monotonic() - started < 5
        assert conn._sftp_count == 2  # the second channel opened only because the first was busy
        with fifo.open("wb") as writer:
            writer.write(b"through the fifo")
        # The exchange ends once a writer comes (the SFTP server then fails to seek in a FIFO: that is fine).
        with contextlib.suppress(ssh.SSHError):
            stuck.result(timeout=10)


def test_a_file_put_over_sftp_reads_back_identically_with_mode_0600(conn: ssh.Connection, tmp_path: Path) -> None:
    path = tmp_path / "job.fio"
    data = os.urandom(3 * 2**20)

    conn.put_file(str(path), data)

    assert conn.exists(str(path))
    assert conn.get_file_if_any(str(path)) == data
    assert path.stat().st_mode & 0o777 == 0o600


def test_putting_a_file_replaces_it_whole_and_leaves_no_temporary_file(conn: ssh.Connection, tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("old")

    conn.put_file(str(path), b"#!/bin/sh\necho new\n", mode=0o700)

    assert path.read_bytes() == b"#!/bin/sh\necho new\n"
    assert path.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in tmp_path.iterdir()] == ["run.sh"]


def test_a_missing_path_does_not_exist_and_reads_as_none(conn: ssh.Connection, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")

    assert conn.get_file_if_any(missing) is None
    assert not conn.exists(missing)


def test_putting_a_file_in_a_missing_directory_says_so(conn: ssh.Connection, tmp_path: Path) -> None:
    with pytest.raises(ssh.SSHError) as caught:
        conn.put_file(str(tmp_path / "no" / "such" / "file"), b"x")

    assert caught.value.reason == "channel"
    assert "does not exist" in str(caught.value)


def test_a_file_larger_than_the_limit_is_refused(conn: ssh.Connection, tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(bytes(2048))

    with pytest.raises(ssh.SSHError) as caught:
        conn.get_file_if_any(str(path), max_bytes=1024)

    assert "larger than 1024 bytes" in str(caught.value)


def test_closing_a_connection_twice_is_harmless(sshd: TestSshd) -> None:
    connection = ssh.connect(sshd.target())
    connection.close()
    connection.close()


def test_files_kept_open_are_read_afresh_each_time_on_a_channel_of_their_own(conn: ssh.Connection) -> None:
    """The host's telemetry keeps its /proc files open (jobs.ssh.files.OpenFiles): each read gives what the kernel
    writes now, a file that is not there reads as None, and the shared SFTP channels go on meanwhile."""
    kept = conn.open_files({"uptime": "/proc/uptime", "stat": "/proc/stat", "none": "/proc/no-such-file"})
    try:
        first = kept.read(max_bytes=2**20)
        time.sleep(0.3)
        second = kept.read(max_bytes=2**20)
        assert first["none"] is None and second["none"] is None
        assert first["stat"] is not None and first["stat"].startswith(b"cpu ")
        assert first["uptime"] is not None and second["uptime"] is not None
        assert float(second["uptime"].split()[0]) > float(first["uptime"].split()[0])  # read afresh, not cached
        with pytest.raises(ssh.SSHError, match="already has its files kept open"):
            conn.open_files({"uptime": "/proc/uptime"})
        assert conn.read_from("/proc/loadavg", 0, max_bytes=4096)  # the shared channels still answer
    finally:
        kept.close()
    with pytest.raises(ssh.SSHError, match="were closed"):
        kept.read(max_bytes=2**20)
    again = conn.open_files({"uptime": "/proc/uptime"})  # its channel was given back
    again.close()
