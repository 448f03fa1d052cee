"""A Unix socket on the host reached through the connection (OpenSSH's `direct-streamlocal@openssh.com` channel),
and a local Unix socket that forwards every connection made to it there (`ssh -L local.sock:remote.sock`).

fio's server listens on a Unix socket in a directory only the benchmark user may enter; the worker's fio client
connects to a local socket in a directory only the worker's user may enter; between them, this. Nothing listens on
a TCP port on either side.

paramiko 5.1 opens `direct-tcpip` channels but does not pack the fields of a stream-local one (RFC 4254 §7.2's
shape, with a socket path for the address: string path, string reserved, uint32 reserved). `open_channel` builds
the CHANNEL_OPEN message and hands it to `Transport._send_user_message`; for the one call, a wrapper on that
method adds the three fields to the message of this kind before it goes out. tests/ssh/test_sockets.py fails if
a paramiko release changes the path this relies on.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
from typing import Any

import paramiko

from jobs.ssh.values import SSHError

KIND = "direct-streamlocal@openssh.com"
_KIND_BYTES = KIND.encode()
_OPENING = threading.Lock()
_CHUNK = 2**15
# sun_path holds 108 bytes with its terminating NUL on Linux (104 on the BSDs and macOS).
MAX_SOCKET_PATH = 103


def open_channel(transport: paramiko.Transport, path: str, *, timeout: float = 15.0) -> paramiko.Channel:
    """A channel to the Unix socket `path` on the host; SSHError (reason channel) when the host refuses it."""
    # The class's own method, never an instance's wrapper that another open put there.
    original = paramiko.Transport._send_user_message  # type: ignore[attr-defined]  # see the module's docstring

    def send(message: paramiko.Message) -> None:
        packed = message.asbytes()
        # byte CHANNEL_OPEN, then the kind as an SSH string: only a message of this kind gets the fields.
        if packed[5 : 5 + len(_KIND_BYTES)] == _KIND_BYTES and packed[1:5] == len(_KIND_BYTES).to_bytes(4, "big"):
            message.add_string(path)
            message.add_string("")
            message.add_int(0)
        original(transport, message)

    with _OPENING:
        transport._send_user_message = send  # type: ignore[attr-defined]
        try:
            return transport.open_channel(KIND, timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SSHError(
                "channel",
                f"the host refused a connection to its Unix socket {path} ({exc}): its sshd must allow local "
                "forwarding to a socket (OpenSSH's AllowStreamLocalForwarding, and AllowTcpForwarding yes or local, "
                "which OpenSSH ties it to; both on by default, off with DisableForwarding or a PermitOpen list)",
            ) from exc
        finally:
            del transport._send_user_message  # type: ignore[attr-defined]  # back to the class's method


class Forward:
    """A local Unix socket at `local_path` (its directory must be the caller's, mode 0700) whose every connection
    is carried to the host's socket `remote_path` over `transport`, until close()."""

    def __init__(self, transport: paramiko.Transport, remote_path: str, local_path: str) -> None:
        if len(local_path.encode()) > MAX_SOCKET_PATH:
            raise ValueError(f"the local socket path {local_path!r} is longer than {MAX_SOCKET_PATH} bytes")
        self.remote_path = remote_path
        self.local_path = local_path
        self.errors: list[str] = []
        self._transport = transport
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(local_path)
        os.chmod(local_path, 0o600)
        self._listener.listen(8)
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, name=f"forward {remote_path}", daemon=True)
        self._accepting.start()

    def close(self) -> None:
        self._closed.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for thread in [self._accepting, *self._threads]:
            thread.join(timeout=5)
        try:
            os.unlink(self.local_path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> Forward:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                channel = open_channel(self._transport, self.remote_path)
            except SSHError as exc:
                self.errors.append(str(exc))
                client.close()
                continue
            thread = threading.Thread(target=self._pump, args=(client, channel), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _pump(self, client: socket.socket, channel: paramiko.Channel) -> None:
        """Bytes both ways until either side ends, or close()."""
        with selectors.DefaultSelector() as selector, client, channel:
            selector.register(client, selectors.EVENT_READ)
            selector.register(channel, selectors.EVENT_READ)
            while not self._closed.is_set():
                for key, _ in selector.select(timeout=0.5):
                    source, sink = (client, channel) if key.fileobj is client else (channel, client)
                    try:
                        data = source.recv(_CHUNK)
                        if not data:
                            return
                        sink.sendall(data)
                    except (OSError, EOFError, paramiko.SSHException) as exc:
                        self.errors.append(f"the connection to {self.remote_path} ended: {exc}")
                        return
