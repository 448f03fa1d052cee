"""Opening a connection: TCP, the SSH handshake against the pinned host key, then the login. Also the
host-key scan a person approves and the private-key parser, which share these steps."""

from __future__ import annotations

import base64
import binascii
import io
import socket
import threading
import time

import paramiko
from paramiko.ssh_exception import IncompatiblePeer  # paramiko exports it; its stubs do not

from jobs import addresses
from jobs.ssh.connection import Connection
from jobs.ssh.values import HostKey, SSHError, Target

KEEPALIVE_S = 15
# How often an idle logged-in connection's thread wakes to look whether it was closed or a keepalive is due
# (paramiko's own 0.1 s is for the handshake, whose timeouts it checks then). A worker keeps a session per host:
# at 200 hosts paramiko's ten wake-ups a second a host were 37 % of the worker's busy time (py-spy, bench/fleet.py),
# each taking the GIL. A close does not wait for it (paramiko closes the socket and stops waiting for the thread).
TRANSPORT_WAKE_S = 1.0

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
        # Logged in, the transport's thread wakes from its socket every TRANSPORT_WAKE_S instead of paramiko's 0.1 s.
        transport.sock.settimeout(TRANSPORT_WAKE_S)
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
