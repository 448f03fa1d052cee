"""A Unix socket on the host reached over the connection (jobs/ssh/sockets.py), against a real sshd: the
stream-local channel paramiko does not pack itself, a local socket forwarding every connection there, both ways,
and a clear refusal when the host's socket is not there."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from jobs import ssh
from jobs.ssh import sockets

pytestmark = pytest.mark.slow


def _echo_server(path: Path) -> socket.socket:
    """A Unix socket at `path` answering each connection with 'echo:' and what it read, until it closes."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                while data := client.recv(65536):
                    client.sendall(b"echo:" + data)

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_local_socket_reaches_the_hosts_socket_both_ways_through_the_connection(sshd, tmp_path: Path) -> None:
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir(mode=0o700)
    server = _echo_server(remote_dir / "fio.sock")
    local_dir = tmp_path / "local"
    local_dir.mkdir(mode=0o700)
    with (
        ssh.connect(sshd.target()) as conn,
        conn.forward_socket(str(remote_dir / "fio.sock"), str(local_dir / "m1.sock")) as forward,
    ):
        # Only its owner can use the local socket.
        assert stat.S_IMODE(os.stat(local_dir / "m1.sock").st_mode) == 0o600
        for _ in range(2):  # each connection gets a channel of its own
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(str(local_dir / "m1.sock"))
                payload = os.urandom(200_000)  # more than one channel window's packet
                client.sendall(payload)
                got = b""
                while len(got) < len(payload) + 5:
                    chunk = client.recv(65536)
                    assert chunk, "the forward closed early"
                    got += chunk
                assert got.startswith(b"echo:") and payload in got.replace(b"echo:", b"")
        assert forward.errors == []
        # The connection still runs commands beside the forward: the transport's own method is back.
        assert conn.run("echo still here", timeout=10).stdout == b"still here\n"
    assert not (local_dir / "m1.sock").exists()
    server.close()


def test_a_missing_socket_on_the_host_is_refused_naming_it(sshd, tmp_path: Path) -> None:
    with ssh.connect(sshd.target()) as conn:
        with pytest.raises(ssh.SSHError) as refused:
            sockets.open_channel(conn._transport, str(tmp_path / "nothing.sock"), timeout=10)
        assert refused.value.reason == "channel"
        assert str(tmp_path / "nothing.sock") in str(refused.value)
        assert "AllowStreamLocalForwarding" in str(refused.value)
        assert conn.run("echo fine", timeout=10).stdout == b"fine\n"


def test_several_forwards_on_one_connection_open_their_channels_at_once(sshd, tmp_path: Path) -> None:
    """Three members on one host share its connection: their channels open at once from three threads, each with
    its own socket path (a wrapper left by one open must not pack another's message twice)."""
    remote_dir, local_dir = tmp_path / "remote", tmp_path / "local"
    remote_dir.mkdir(mode=0o700)
    local_dir.mkdir(mode=0o700)
    servers = [_echo_server(remote_dir / f"s{n}.sock") for n in range(3)]
    answers: dict[int, bytes] = {}

    def talk(n: int) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(local_dir / f"m{n}.sock"))
            for _ in range(20):
                client.sendall(f"member {n}".encode())
                answers[n] = client.recv(100)

    with ssh.connect(sshd.target()) as conn:
        forwards = [
            conn.forward_socket(str(remote_dir / f"s{n}.sock"), str(local_dir / f"m{n}.sock")) for n in range(3)
        ]
        for _ in range(5):
            threads = [threading.Thread(target=talk, args=(n,)) for n in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=30)
            assert answers == {n: f"echo:member {n}".encode() for n in range(3)}
            answers.clear()
        assert [f.errors for f in forwards] == [[], [], []]
        for forward in forwards:
            forward.close()
    assert "unexpected bytes" not in sshd.handle.log()
    for server in servers:
        server.close()
