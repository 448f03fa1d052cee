"""SSH to target hosts: pinned host keys, in-memory credentials, bounded waits.

The only module that imports paramiko. It knows nothing of Django: callers pass plain values and get
`SSHError` with a `reason` and a sentence a person can act on. Secrets (passwords, private keys,
passphrases) never appear in a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import binascii
import io
import secrets
import shlex
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import TracebackType

import paramiko
from paramiko.ssh_exception import IncompatiblePeer  # paramiko exports it; its stubs do not

from jobs import addresses

KEEPALIVE_S = 15
MAX_OUTPUT_BYTES = 256 * 2**20
# An SFTP request that makes no progress for this long means the connection is gone.
SFTP_STALL_TIMEOUT_S = 60.0
_READ_CHUNK = 2**20
_SEND_CHUNK = 2**15
_IDLE_WAIT_S = 0.005
# Commands and SFTP exchanges open channels on one connection at once (a persistent session carries every run
# on its host), and OpenSSH allows MaxSessions (10 by default) per connection: stay under it. An SFTP channel
# answers one request at a time, so a few of them let launches, looks and collections on one host overlap.
MAX_COMMAND_CHANNELS = 5
MAX_SFTP_CHANNELS = 3
# Started once per shell channel through the login shell (which reads its start-up files that one time); every
# command after it is a fork and exec of /bin/sh on the host, with no new SSH session and no login shell.
SHELL_COMMAND = "exec /bin/sh"

# Host-key algorithms per key type, in OpenSSH's order of preference. An RSA key is one key type
# ("ssh-rsa") but is negotiated with SHA-2 signature algorithms.
_HOST_KEY_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "ssh-ed25519": ("ssh-ed25519",),
    "ecdsa-sha2-nistp256": ("ecdsa-sha2-nistp256",),
    "ecdsa-sha2-nistp384": ("ecdsa-sha2-nistp384",),
    "ecdsa-sha2-nistp521": ("ecdsa-sha2-nistp521",),
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256"),
}
_PRIVATE_KEY_CLASSES: tuple[type[paramiko.PKey], ...] = (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey)


class SSHError(Exception):
    """`reason` is one of: bad_address, unreachable, timeout, host_key_unknown, host_key_changed, auth_failed,
    bad_credential, channel. str(error) says what happened and what to do next."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        # For host_key_changed: the approved key and the one presented (None when the host no longer offers
        # that type), so the refusal can be recorded without parsing the message.
        self.pinned: HostKey | None = None
        self.presented: HostKey | None = None


@dataclass(frozen=True)
class HostKey:
    key_type: str  # as in a .pub file: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa
    key_b64: str
    fingerprint: str  # "SHA256:..." exactly as `ssh-keygen -lf` prints it


@dataclass(frozen=True)
class Target:
    address: str
    port: int
    username: str
    host_key: HostKey | None
    password: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    passphrase: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CommandResult:
    # As the shell reports it: 128 + N when the command was killed by signal N; -1 when a command that had a
    # channel of its own (one given stdin) was killed by a signal, the server sending no status then.
    exit_status: int
    stdout: bytes
    stderr: bytes


class _Budget:
    """One clock for every step of a connection attempt, so the steps together never overrun."""

    def __init__(self, timeout: float, deadline: float | None) -> None:
        self.timeout = timeout
        self.end = time.monotonic() + timeout
        if deadline is not None:
            self.end = min(self.end, deadline)

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


def _where(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _host_key_of(key: paramiko.PKey) -> HostKey:
    return HostKey(key.get_name(), key.get_base64(), key.fingerprint)


def host_key_from_line(line: str) -> HostKey:
    """A host key from a public-key line ("ssh-ed25519 AAAA... comment"), as in ssh_host_*_key.pub."""
    try:
        key_type, key_b64 = line.split()[:2]
        key = paramiko.PKey.from_type_string(key_type, base64.b64decode(key_b64, validate=True))
    except (ValueError, binascii.Error, paramiko.SSHException) as exc:
        raise ValueError(f"not an SSH public key line ({exc}); expected e.g. 'ssh-ed25519 AAAAC3... host'") from exc
    return _host_key_of(key)


def _timed_out(where: str, budget: _Budget, step: str) -> SSHError:
    return SSHError(
        "timeout",
        f"{where} did not finish {step} within {budget.timeout:g} s: check that the host is up and that the "
        "port is open to this worker, then retry.",
    )


def _tcp_connect(address: str, port: int, budget: _Budget) -> socket.socket:
    try:
        address = addresses.check(address)
    except addresses.AddressError as exc:
        raise SSHError("bad_address", f"{exc} Correct it on the host's edit page; nothing was sent.") from exc
    if not 1 <= port <= 65535:
        raise SSHError("bad_address", f"The port {port} is not 1 to 65535: correct it on the host's edit page.")
    where = _where(address, port)
    try:
        sock = socket.create_connection((address, port), timeout=max(budget.remaining(), 0.001))
        # Each SSH channel request is a small write waiting for a small answer: without NODELAY, Nagle and
        # delayed ACKs add ~40 ms to every command (measured by bench/run_overhead.py).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    except socket.gaierror as exc:
        raise SSHError(
            "unreachable", f"The host name {address!r} could not be resolved ({exc.strerror}): check the address."
        ) from exc
    except TimeoutError as exc:
        raise _timed_out(where, budget, "opening a TCP connection") from exc
    except ConnectionRefusedError as exc:
        raise SSHError(
            "unreachable",
            f"{where} refused the connection: check that sshd runs there and listens on port {port}.",
        ) from exc
    except OSError as exc:
        raise SSHError(
            "unreachable", f"{where} could not be reached ({exc.strerror or exc}): check the address and the network."
        ) from exc


def _handshake(address: str, port: int, budget: _Budget, key_types: tuple[str, ...]) -> paramiko.Transport:
    """TCP connect and SSH key exchange, offering only `key_types` as host-key algorithms. No authentication."""
    where = _where(address, port)
    sock = _tcp_connect(address, port, budget)
    try:
        transport = paramiko.Transport(sock)
    except BaseException:
        sock.close()
        raise
    try:
        transport.banner_timeout = transport.handshake_timeout = max(budget.remaining(), 0.001)
        transport.get_security_options().key_types = key_types
        done = threading.Event()
        transport.start_client(event=done)
        # Poll rather than wait on `done` alone: a failed negotiation ends the transport without setting it.
        while not done.wait(0.05):
            if not transport.is_active():
                break
            if budget.expired():
                raise _timed_out(where, budget, "the SSH handshake")
        if not transport.is_active():
            raise transport.get_exception() or paramiko.SSHException("the server closed the connection")
        return transport
    except SSHError:
        transport.close()
        raise
    except (paramiko.SSHException, EOFError, OSError) as exc:
        transport.close()
        if isinstance(exc, IncompatiblePeer) and "host key" in str(exc):
            raise  # the caller knows which key it asked for
        if budget.expired():
            raise _timed_out(where, budget, "the SSH handshake") from exc
        raise SSHError(
            "unreachable",
            f"{where} answered but the SSH handshake failed ({exc}): check that this port is an SSH server.",
        ) from exc


def scan_host_key(address: str, port: int, *, timeout: float = 10, key_type: str | None = None) -> HostKey:
    """The key the server presents, fetched without authenticating, for a person to compare and approve; with
    `key_type`, only a key of that type (the approved key's, to see whether the host presents it again)."""
    budget = _Budget(timeout, None)
    offered = _HOST_KEY_ALGORITHMS.get(key_type or "") or tuple(
        algorithm for algorithms in _HOST_KEY_ALGORITHMS.values() for algorithm in algorithms
    )
    try:
        transport = _handshake(address, port, budget, offered)
    except IncompatiblePeer as exc:
        raise SSHError(
            "unreachable",
            f"{_where(address, port)} offers no host key of a type benchweb can verify (ed25519, ecdsa, rsa): "
            "add one to its sshd configuration.",
        ) from exc
    try:
        return _host_key_of(transport.get_remote_server_key())
    finally:
        transport.close()


def load_private_key(text: str, passphrase: str | None = None) -> paramiko.PKey:
    """Parse an ed25519, ecdsa or rsa key (OpenSSH or PEM format) from memory; it never touches a disk."""
    wrong_passphrase = False
    for key_class in _PRIVATE_KEY_CLASSES:
        try:
            return key_class.from_private_key(io.StringIO(text.strip() + "\n"), password=passphrase)
        except paramiko.PasswordRequiredException:
            raise SSHError(
                "bad_credential",
                "The private key is encrypted and needs its passphrase: add the passphrase to the credential.",
            ) from None
        except (paramiko.SSHException, ValueError, TypeError, IndexError) as exc:
            # Each class refuses the other types; only its own class reports a bad passphrase.
            wrong_passphrase = wrong_passphrase or "checkints" in str(exc) or "Bad password" in str(exc)
    if passphrase and wrong_passphrase:
        raise SSHError(
            "bad_credential", "The private key could not be decrypted: check the passphrase stored with the credential."
        )
    raise SSHError(
        "bad_credential",
        "The private key could not be read: benchweb accepts ed25519, ecdsa and rsa keys in OpenSSH or PEM "
        "format. Convert it with `ssh-keygen -p -f KEYFILE` and store it again.",
    )


def connect(target: Target, *, timeout: float = 15, deadline: float | None = None) -> Connection:
    """Open an authenticated connection to a host whose key is pinned.

    `timeout` bounds the whole attempt (TCP, banner, key exchange, login); `deadline`, a `time.monotonic()`
    instant such as the end of a task's time limit, shortens it further.
    """
    where = _where(target.address, target.port)
    pinned = target.host_key
    if pinned is None:
        raise SSHError(
            "host_key_unknown",
            f"{where} has no approved host key: scan and approve it first. Nothing was sent to the host.",
        )
    key_types = _HOST_KEY_ALGORITHMS.get(pinned.key_type)
    try:
        pinned_blob = base64.b64decode(pinned.key_b64, validate=True)
    except binascii.Error:
        pinned_blob = None
    if key_types is None or not pinned_blob:
        raise SSHError(
            "host_key_unknown",
            f"The approved host key for {where} ({pinned.key_type}) is not one benchweb can verify: scan the host "
            "again and approve an ed25519, ecdsa or rsa key. Nothing was sent to the host.",
        )
    pkey = load_private_key(target.private_key, target.passphrase) if target.private_key else None
    if pkey is None and target.password is None:
        raise SSHError("bad_credential", f"No password or private key was given for {where}: choose a credential.")

    budget = _Budget(timeout, deadline)
    try:
        transport = _handshake(target.address, target.port, budget, key_types)
    except IncompatiblePeer as exc:
        raise _key_changed(target, pinned, _rescan(target, budget)) from exc
    try:
        presented = transport.get_remote_server_key()
        if presented.get_name() != pinned.key_type or presented.asbytes() != pinned_blob:
            raise _key_changed(target, pinned, _host_key_of(presented))
        _authenticate(transport, target, pkey, budget)
        transport.set_keepalive(KEEPALIVE_S)
        transport.channel_timeout = timeout
    except BaseException:
        transport.close()
        raise
    return Connection(transport, where)


def _rescan(target: Target, budget: _Budget) -> HostKey | None:
    """What the host presents instead of the pinned key type, to name it in the refusal, if time is left."""
    if budget.remaining() <= 0:
        return None
    try:
        return scan_host_key(target.address, target.port, timeout=budget.remaining())
    except SSHError:
        return None


def _key_changed(target: Target, pinned: HostKey, presented: HostKey | None) -> SSHError:
    where = _where(target.address, target.port)
    shown = (
        f"presented {presented.fingerprint} ({presented.key_type})"
        if presented
        else f"no longer offers a {pinned.key_type} key"
    )
    error = SSHError(
        "host_key_changed",
        f"{where} {shown}, but the approved key is {pinned.fingerprint} ({pinned.key_type}). Nothing was sent: "
        "no login was attempted. If the host was reinstalled or its keys rotated, scan and approve the new key; "
        "otherwise treat this as a possible man-in-the-middle.",
    )
    error.pinned, error.presented = pinned, presented
    return error


def _authenticate(transport: paramiko.Transport, target: Target, pkey: paramiko.PKey | None, budget: _Budget) -> None:
    where = _where(target.address, target.port)
    attempts: list[tuple[str, str]] = []
    if pkey is not None:
        attempts.append(("publickey", f"the private key {pkey.fingerprint} ({pkey.get_name()})"))
    if target.password is not None:
        attempts.append(("password", "the password"))
    refusals = []
    for method, credential in attempts:
        transport.auth_timeout = max(budget.remaining(), 0.001)
        try:
            if method == "publickey":
                assert pkey is not None  # tried only with a key
                transport.auth_publickey(target.username, pkey)
            else:
                assert target.password is not None  # tried only with a password
                # fallback=True answers a keyboard-interactive password prompt when plain password is off.
                transport.auth_password(target.username, target.password, fallback=True)
        except paramiko.BadAuthenticationType as exc:
            refusals.append(f"it does not accept {method} logins (it accepts: {', '.join(exc.allowed_types)})")
            continue
        except paramiko.AuthenticationException as exc:
            if budget.expired():
                raise _timed_out(where, budget, "logging in") from exc
            if not transport.is_active():
                raise _closed_during_login(where, credential) from exc
            refusals.append(f"it refused {credential}")
            continue
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise SSHError(
                "unreachable", f"{where} dropped the connection during login ({type(exc).__name__}): retry later."
            ) from exc
        if transport.is_authenticated():
            return
        refusals.append(f"it accepted {credential} but asks for a further login step, which benchweb does not do")
    raise SSHError(
        "auth_failed",
        f"{where} refused the login as {target.username!r}: {'; '.join(refusals)}. Check the user name and the "
        f"credential; for a key, its public half must be in ~{target.username}/.ssh/authorized_keys on the host.",
    )


def _closed_during_login(where: str, credential: str) -> SSHError:
    """paramiko raises the same AuthenticationException for a refusal and for a connection the server closed
    before answering (a killed session, MaxStartups, LoginGraceTime); only a refusal leaves the transport up."""
    return SSHError(
        "unreachable",
        f"{where} closed the connection during login, before answering {credential}: that says nothing about the "
        "credential. Retry later; if it happens every time, the host's sshd log says why (e.g. MaxStartups, "
        "MaxAuthTries, LoginGraceTime).",
    )


class Connection:
    """An authenticated SSH connection: commands, and files over SFTP. Use as a context manager."""

    def __init__(self, transport: paramiko.Transport, where: str) -> None:
        self._transport = transport
        # SFTP clients waiting for their next exchange; each serves one thread's exchange at a time, and a new
        # one is opened only while all the others are busy, up to MAX_SFTP_CHANNELS.
        self._idle_sftp: list[paramiko.SFTPClient] = []
        self._sftp_count = 0
        self._sftp_changed = threading.Condition()
        self._channels = threading.BoundedSemaphore(MAX_COMMAND_CHANNELS)
        # Shells waiting for their next command; a command takes one (or starts one) and gives it back.
        self._idle_shells: list[_Shell] = []
        self._shells_lock = threading.Lock()
        self.where = where

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Connection {self.where}>"

    def close(self) -> None:
        with self._sftp_changed:
            clients, self._idle_sftp = self._idle_sftp, []
        for client in clients:
            with suppress(paramiko.SSHException, EOFError, OSError):
                client.close()
        self._close_idle_shells()
        self._transport.close()

    def is_active(self) -> bool:
        """Whether the connection is still up as far as this side knows (keepalives notice a dead peer)."""
        return self._transport.is_active()

    # ------------------------------------------------------------------------------------------------ commands

    def run(
        self, command: str, *, timeout: float = 60, stdin: bytes | None = None, max_output: int = MAX_OUTPUT_BYTES
    ) -> CommandResult:
        """Run one POSIX shell command string (the caller quotes every part) and wait for it, at most `timeout` s.

        Without stdin it runs as `/bin/sh -c` in a long-lived shell of this connection (see _Shell): no new SSH
        session and no login shell on the host. With stdin it gets a channel of its own, as `ssh host cmd` does."""
        deadline = time.monotonic() + timeout
        if not self._channels.acquire(timeout=timeout):
            raise self._command_timeout(timeout)
        try:
            if stdin is None:
                return self._run_in_shell(command, deadline, timeout, max_output)
            self._close_idle_shells()  # keeps this connection's channels under the server's MaxSessions
            return self._run(command, deadline, timeout, stdin, max_output)
        finally:
            self._channels.release()

    def _run_in_shell(self, command: str, deadline: float, timeout: float, max_output: int) -> CommandResult:
        shell = self._take_shell(deadline, timeout)
        try:
            result = shell.run(command, deadline, max_output)
        except _ShellTimeout:
            shell.close()
            raise self._command_timeout(timeout) from None
        except _ShellOverflow:
            shell.close()
            raise self._too_much_output(max_output) from None
        except (_ShellGone, paramiko.SSHException, EOFError, OSError) as exc:
            shell.close()
            raise self._lost("running a command", exc) from exc
        with self._shells_lock:
            self._idle_shells.append(shell)
        return result

    def _take_shell(self, deadline: float, timeout: float) -> _Shell:
        with self._shells_lock:
            while self._idle_shells:
                shell = self._idle_shells.pop()
                if shell.alive():
                    return shell
                shell.close()
        channel = self._open_channel(deadline)
        shell = _Shell(channel)
        try:
            _exec(channel, SHELL_COMMAND, deadline)
            shell.wait_ready(deadline)
        except _ShellTimeout:
            shell.close()
            raise self._command_timeout(timeout) from None
        except (_ShellGone, _ShellOverflow, paramiko.SSHException, EOFError, OSError) as exc:
            shell.close()
            if time.monotonic() >= deadline:
                raise self._command_timeout(timeout) from exc
            raise self._lost("starting a shell", exc) from exc
        return shell

    def _open_channel(self, deadline: float) -> paramiko.Channel:
        try:
            return self._transport.open_session(timeout=max(deadline - time.monotonic(), 0.001))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise self._lost("opening a session", exc) from exc

    def _close_idle_shells(self) -> None:
        with self._shells_lock:
            shells, self._idle_shells = self._idle_shells, []
        for shell in shells:
            shell.close()

    def _run(
        self, command: str, deadline: float, timeout: float, stdin: bytes | None, max_output: int
    ) -> CommandResult:
        channel = self._open_channel(deadline)
        try:
            _exec(channel, command, deadline)
            return self._exchange(channel, deadline, timeout, stdin, max_output)
        except SSHError:
            raise
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if time.monotonic() >= deadline:
                raise self._command_timeout(timeout) from exc
            raise self._lost("running a command", exc) from exc
        finally:
            channel.close()

    def _exchange(
        self, channel: paramiko.Channel, deadline: float, timeout: float, stdin: bytes | None, max_output: int
    ) -> CommandResult:
        # One loop feeds stdin and drains stdout and stderr together: waiting on any one of them alone can
        # deadlock once the remote side blocks writing to another that nobody reads.
        pending = memoryview(stdin or b"")
        if not pending:
            channel.shutdown_write()
        out: list[bytes] = []
        err: list[bytes] = []
        received = 0
        while True:
            progressed = False
            while channel.recv_ready():
                chunk = channel.recv(_READ_CHUNK)
                out.append(chunk)
                received += len(chunk)
                progressed = True
            while channel.recv_stderr_ready():
                chunk = channel.recv_stderr(_READ_CHUNK)
                err.append(chunk)
                received += len(chunk)
                progressed = True
            if received > max_output:
                raise self._too_much_output(max_output)
            if pending and channel.exit_status_ready():
                pending = memoryview(b"")  # it finished without reading all of its input
            if pending and channel.send_ready():
                sent = channel.send(pending[:_SEND_CHUNK])  # type: ignore[arg-type]  # any buffer; the stubs say bytes
                pending = pending[sent:]
                if not pending:
                    channel.shutdown_write()
                progressed = True
            # OpenSSH may send the exit status before the last of the output, so wait for end-of-file too.
            finished = channel.closed or (channel.status_event.is_set() and channel.eof_received)
            if finished and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            if time.monotonic() >= deadline:
                raise self._command_timeout(timeout)
            if not progressed:
                time.sleep(_IDLE_WAIT_S)
        if channel.exit_status == -1 and not self._transport.is_active():
            raise self._lost("running a command", None)
        return CommandResult(channel.exit_status, b"".join(out), b"".join(err))

    def _too_much_output(self, max_output: int) -> SSHError:
        return SSHError(
            "channel",
            f"The command on {self.where} wrote more than {max_output / 2**20:g} MiB of output; benchweb "
            "stopped reading and closed its channel. Redirect large output to a file on the host.",
        )

    def _command_timeout(self, timeout: float) -> SSHError:
        return SSHError(
            "timeout",
            f"A command on {self.where} did not finish within {timeout:g} s; benchweb closed its channel, but the "
            "process may still be running on the host. Check the host, then retry with a longer timeout.",
        )

    def _lost(self, step: str, exc: BaseException | None) -> SSHError:
        detail = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        return SSHError("channel", f"The connection to {self.where} failed while {step}{detail}: retry later.")

    # --------------------------------------------------------------------------------------------------- files

    def put_file(self, path: str, data: bytes, *, mode: int = 0o600) -> None:
        """Write `path` atomically: readers see the old file or the whole new one, never a part."""
        temporary = f"{path}.tmp-{secrets.token_hex(8)}"
        with self._sftp_errors("write", path) as sftp:
            try:
                with sftp.open(temporary, "wb") as handle:
                    # The file is empty until its mode is set, so no content is ever readable under a looser one.
                    handle.chmod(mode)
                    handle.set_pipelined(True)
                    handle.write(data)
                sftp.posix_rename(temporary, path)
            except BaseException:
                # Cleanup after a failure that is about to be reported: its own failure would only hide it.
                with suppress(paramiko.SSHException, EOFError, OSError):
                    sftp.remove(temporary)
                raise

    def get_file_if_any(self, path: str, *, max_bytes: int = 256 * 2**20) -> bytes | None:
        """The whole file, or None when there is none (one exchange fewer than asking first)."""
        with self._sftp_errors("read", path) as sftp:
            handle = _open_if_any(sftp, path)
            if handle is None:
                return None
            with handle:
                size = handle.stat().st_size or 0
                data = b""
                if size <= max_bytes:
                    handle.prefetch(size)
                    # One byte past the limit tells a file that grew since stat from one that did not.
                    data = handle.read(max_bytes + 1)
            if size > max_bytes or len(data) > max_bytes:
                raise SSHError(
                    "channel",
                    f"{path} on {self.where} is larger than {max_bytes} bytes, more than benchweb reads at once.",
                )
            return data

    def exists(self, path: str) -> bool:
        return self.size_of(path) is not None

    def size_of(self, path: str) -> int | None:
        """The size of `path` in bytes (what it points to, for a link), or None when there is nothing there."""
        with self._sftp_errors("check", path) as sftp:
            try:
                return sftp.stat(path).st_size or 0
            except FileNotFoundError:
                return None

    def read_from(self, path: str, offset: int, *, max_bytes: int) -> bytes | None:
        """Up to `max_bytes` of `path` from byte `offset` on (b"" at or past its end), or None when there is no
        such file. One open, read and close over the session's SFTP channel: nothing is started on the host."""
        with self._sftp_errors("read", path) as sftp:
            handle = _open_if_any(sftp, path)
            if handle is None:
                return None
            with handle:
                handle.seek(offset)
                return handle.read(max_bytes)

    def real_path(self, path: str) -> str | None:
        """The host's canonical absolute path for `path` (relative paths are from the login user's home, where
        the SFTP server starts), or None when it does not exist."""
        with self._sftp_errors("resolve", path) as sftp:
            try:
                return sftp.normalize(path)
            except FileNotFoundError:
                return None

    def list_dir(self, path: str) -> list[str] | None:
        """The names in directory `path`, or None when it does not exist."""
        with self._sftp_errors("list", path) as sftp:
            try:
                return sftp.listdir(path)
            except FileNotFoundError:
                return None

    def _take_sftp(self) -> paramiko.SFTPClient:
        with self._sftp_changed:
            while not self._idle_sftp and self._sftp_count >= MAX_SFTP_CHANNELS:
                if not self._sftp_changed.wait(timeout=SFTP_STALL_TIMEOUT_S):
                    raise SSHError(
                        "timeout",
                        f"Every SFTP channel to {self.where} stayed busy for {SFTP_STALL_TIMEOUT_S:g} s. Retry later.",
                    )
            if self._idle_sftp:
                return self._idle_sftp.pop()
            self._sftp_count += 1
        try:
            client = paramiko.SFTPClient.from_transport(self._transport)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._drop_sftp(None)
            raise SSHError(
                "channel",
                f"{self.where} refused an SFTP session ({exc}): enable the sftp subsystem in its sshd_config.",
            ) from exc
        except BaseException:
            self._drop_sftp(None)
            raise
        # None only where no channel opens, and paramiko raises for that instead.
        assert client is not None
        channel = client.get_channel()
        assert channel is not None
        channel.settimeout(SFTP_STALL_TIMEOUT_S)
        return client

    def _give_back_sftp(self, client: paramiko.SFTPClient) -> None:
        with self._sftp_changed:
            self._idle_sftp.append(client)
            self._sftp_changed.notify()

    def _drop_sftp(self, client: paramiko.SFTPClient | None) -> None:
        """Forget a broken SFTP channel (None: one that never opened): the next exchange opens a new one."""
        if client is not None:
            with suppress(paramiko.SSHException, EOFError, OSError):
                client.close()
        with self._sftp_changed:
            self._sftp_count -= 1
            self._sftp_changed.notify()

    @contextmanager
    def _sftp_errors(self, action: str, path: str) -> Iterator[paramiko.SFTPClient]:
        """An SFTP client of this connection, held for one exchange, with its failures as SSHError."""
        client = self._take_sftp()
        broken = True
        try:
            yield client
            broken = False
        except FileNotFoundError as exc:
            broken = False
            raise SSHError(
                "channel", f"Could not {action} {path} on {self.where}: it or its directory does not exist."
            ) from exc
        except PermissionError as exc:
            broken = False
            raise SSHError(
                "channel",
                f"Could not {action} {path} on {self.where}: permission denied. Check the login user's rights there.",
            ) from exc
        except SSHError:
            broken = False
            raise
        except TimeoutError as exc:
            raise SSHError(
                "timeout",
                f"Could not {action} {path} on {self.where}: no progress for {SFTP_STALL_TIMEOUT_S:g} s. Retry later.",
            ) from exc
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise SSHError("channel", f"Could not {action} {path} on {self.where}: {exc}.") from exc
        finally:
            if broken:
                self._drop_sftp(client)
            else:
                self._give_back_sftp(client)


def _exec(channel: paramiko.Channel, command: str, deadline: float) -> None:
    # exec_command waits for the server's reply without a limit of its own: closing the channel ends it.
    watchdog = threading.Timer(max(deadline - time.monotonic(), 0), channel.close)
    watchdog.start()
    try:
        channel.exec_command(command)
    finally:
        watchdog.cancel()


class _ShellTimeout(Exception):
    pass


class _ShellOverflow(Exception):
    pass


class _ShellGone(Exception):
    pass


class _Shell:
    """A /bin/sh on the host reading commands from its channel, one at a time, so a command costs a fork
    there instead of an SSH session and a login shell (~0.1-0.3 s of the host's CPU with a heavy .bashrc).

    Each command is sent as one line: `/bin/sh -c '<command>' </dev/null`, then the status and an end mark on
    stdout and the same mark on stderr. The mark holds a fresh random nonce, so no output can end a command
    early, and the command's own stdin is /dev/null, so it can never read the commands that follow. Whatever
    the login shell printed before the first mark is dropped."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self._out = bytearray()
        self._err = bytearray()

    def alive(self) -> bool:
        channel = self.channel
        return not (channel.closed or channel.eof_received or channel.exit_status_ready())

    def close(self) -> None:
        with suppress(paramiko.SSHException, EOFError, OSError):
            self.channel.close()

    def wait_ready(self, deadline: float) -> None:
        nonce = secrets.token_hex(16)
        self._send(f"printf '\\0%s\\0%d\\0' {nonce} 0; printf '\\0%s\\0' {nonce} >&2\n", deadline)
        self._read_until(nonce.encode(), deadline, MAX_OUTPUT_BYTES)

    def run(self, command: str, deadline: float, max_output: int) -> CommandResult:
        nonce = secrets.token_hex(16)
        ends = f"printf '\\0%s\\0%d\\0' {nonce} $?; printf '\\0%s\\0' {nonce} >&2"
        self._send(f"/bin/sh -c {shlex.quote(command)} </dev/null; {ends}\n", deadline)
        out, err, status = self._read_until(nonce.encode(), deadline, max_output)
        return CommandResult(int(status), out, err)

    def _send(self, text: str, deadline: float) -> None:
        self.channel.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            self.channel.sendall(text.encode())
        except TimeoutError:
            raise _ShellTimeout from None

    def _read_until(self, nonce: bytes, deadline: float, max_output: int) -> tuple[bytes, bytes, bytes]:
        """This command's stdout and stderr, and its status, once both ends are marked."""
        mark = b"\0" + nonce + b"\0"
        limit = max_output + 2 * (len(mark) + 8)
        channel = self.channel
        out_at = err_at = -1
        while True:
            # A mark may straddle two reads: look again from just before where the last look ended.
            out_from = max(len(self._out) - len(mark), 0)
            err_from = max(len(self._err) - len(mark), 0)
            progressed = False
            while channel.recv_ready() and len(self._out) + len(self._err) <= limit:
                self._out += channel.recv(_READ_CHUNK)
                progressed = True
            while channel.recv_stderr_ready() and len(self._out) + len(self._err) <= limit:
                self._err += channel.recv_stderr(_READ_CHUNK)
                progressed = True
            if out_at < 0:
                out_at = self._out.find(mark, out_from)
            if err_at < 0:
                err_at = self._err.find(mark, err_from)
            status_end = self._out.find(b"\0", out_at + len(mark)) if out_at >= 0 else -1
            if status_end >= 0 and err_at >= 0:
                out = bytes(self._out[:out_at])
                status = bytes(self._out[out_at + len(mark) : status_end])
                err = bytes(self._err[:err_at])
                del self._out[: status_end + 1]
                del self._err[: err_at + len(mark)]
                if not status.isdigit():
                    raise _ShellGone(f"the shell answered a status of {status[:40]!r}")
                if len(out) + len(err) > max_output:
                    raise _ShellOverflow  # all of it came in before a look at the size
                return out, err, status
            if len(self._out) + len(self._err) > limit:
                raise _ShellOverflow
            if not progressed:
                if not self.alive():
                    raise _ShellGone("the shell on the host ended")
                if time.monotonic() >= deadline:
                    raise _ShellTimeout
                time.sleep(_IDLE_WAIT_S)


def _open_if_any(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPFile | None:
    """path opened for reading, or None when there is no such file."""
    try:
        return sftp.open(path, "rb")
    except FileNotFoundError:
        return None
