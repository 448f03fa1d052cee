"""A private OpenSSH server on this machine: the tests' SSH target, and a demo target for a fresh checkout.

Plain subprocess and ssh-keygen; no paramiko, no Django. Everything it writes lives in one work directory,
and a host key already there is reused, so a restarted server keeps the fingerprint that was approved.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

SSHD = Path("/usr/sbin/sshd")
# sshd refuses to start as root without its privilege-separation directory; Debian creates it at boot only.
PRIVSEP_DIR = Path("/run/sshd")
_BIND_FAILED = ("Bind to port", "Cannot bind any address")


class SshdError(Exception):
    pass


@dataclass(frozen=True)
class PublicKey:
    key_type: str
    key_b64: str
    fingerprint: str  # "SHA256:..." as `ssh-keygen -lf` prints it


def sshd_available() -> bool:
    return SSHD.is_file() and os.access(SSHD, os.X_OK)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def generate_user_key(
    workdir: Path, *, name: str = "id_ed25519", key_type: str = "ed25519", passphrase: str = ""
) -> tuple[str, str]:
    """A new key pair as (private key text, public key line). The passphrase shows in `ps`: for tests only."""
    path = Path(workdir) / name
    _keygen(path, key_type, passphrase)
    return path.read_text(), _pub(path).read_text().strip()


def ensure_host_key(path: Path, key_type: str = "ed25519") -> None:
    """Make a host key at path unless one is there: a kept key keeps its approved fingerprint."""
    if not path.exists():
        _keygen(path, key_type, "")


def public_key_of(pub_path: Path) -> PublicKey:
    key_type, key_b64 = pub_path.read_text().split()[:2]
    listing = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub_path)], capture_output=True, text=True, check=True
    )
    return PublicKey(key_type, key_b64, listing.stdout.split()[1])


def sshd_config(
    *,
    port: int,
    listen_address: str,
    host_key_paths: Sequence[Path],
    pid_path: Path,
    authorized_keys_path: Path,
    password_authentication: bool,
    as_root: bool,
) -> str:
    lines = [
        f"ListenAddress {listen_address}",
        f"Port {port}",
        *(f'HostKey "{path}"' for path in host_key_paths),
        f'PidFile "{pid_path}"',
        f'AuthorizedKeysFile "{authorized_keys_path}"',
        "PubkeyAuthentication yes",
        f"PasswordAuthentication {'yes' if password_authentication else 'no'}",
        "KbdInteractiveAuthentication no",
        "PermitEmptyPasswords no",
        # Without PAM, sshd checks passwords against /etc/shadow itself, which needs no PAM stack here.
        "UsePAM no",
        # The work directory is wherever the caller put it (often /tmp): don't demand root-owned parents.
        "StrictModes no",
        f"PermitRootLogin {'prohibit-password' if as_root else 'no'}",
        "LogLevel VERBOSE",
        "LoginGraceTime 30",
        "PrintMotd no",
        "X11Forwarding no",
        # fio's client/server mode reaches each member's server socket over a stream-local channel, which OpenSSH
        # allows only where local forwarding is allowed; PermitOpen none still refuses every TCP destination.
        "AllowTcpForwarding local",
        "Subsystem sftp internal-sftp",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class SshdHandle:
    port: int
    host_keys: dict[str, PublicKey]  # by key type, e.g. "ssh-ed25519"
    process: subprocess.Popen[bytes]
    log_path: Path
    workdir: Path
    authorized_keys_path: Path
    address: str = "127.0.0.1"
    _log_file: BinaryIO | None = field(default=None, repr=False)

    @property
    def host_key(self) -> PublicKey:
        """The first of its host keys, the one to pin when it has several."""
        return next(iter(self.host_keys.values()))

    def authorize(self, public_key_line: str) -> None:
        """Allow one more key; sshd reads the file at each login, so no restart is needed."""
        with self.authorized_keys_path.open("a") as keys:
            keys.write(public_key_line.strip() + "\n")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log_file is not None:
            self._log_file.close()

    def restart(self, startup_timeout: float = 10) -> SshdHandle:
        """Start the server again on the same port with the same keys (after stop())."""
        self.stop()
        self._log_file = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(self.workdir / "sshd_config")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        if not _wait_for_banner(self, startup_timeout):
            raise SshdError(f"sshd did not restart; the end of its log:\n{self.log()[-2000:]}")
        return self

    def __enter__(self) -> SshdHandle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_sshd(
    workdir: Path,
    *,
    authorized_keys: Iterable[str] = (),
    port: int | None = None,
    listen_address: str = "127.0.0.1",
    password_authentication: bool = False,
    host_key_types: Sequence[str] = ("ed25519",),
    startup_timeout: float = 10,
) -> SshdHandle:
    """Start `sshd -D` on `port` (a free one when None) and return once it answers with an SSH banner."""
    if not sshd_available():
        raise SshdError(f"{SSHD} is missing: install the openssh-server package.")
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    host_key_paths = [workdir / f"ssh_host_{key_type}_key" for key_type in host_key_types]
    for path, key_type in zip(host_key_paths, host_key_types, strict=True):
        if not path.exists():
            _keygen(path, key_type, "")
    host_keys = {key.key_type: key for key in (public_key_of(_pub(path)) for path in host_key_paths)}
    authorized_keys_path = workdir / "authorized_keys"
    authorized_keys_path.write_text("".join(line.strip() + "\n" for line in authorized_keys))
    as_root = os.geteuid() == 0
    if as_root:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    # A free port can be taken between the probe and sshd's bind: try a few before giving up.
    for _attempt in range(1 if port else 5):
        chosen = port or free_port()
        config_path = workdir / "sshd_config"
        config_path.write_text(
            sshd_config(
                port=chosen,
                listen_address=listen_address,
                host_key_paths=host_key_paths,
                pid_path=workdir / "sshd.pid",
                authorized_keys_path=authorized_keys_path,
                password_authentication=password_authentication,
                as_root=as_root,
            )
        )
        log_path = workdir / "sshd.log"
        log_file = log_path.open("ab")
        process = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
        handle = SshdHandle(
            port=chosen,
            host_keys=host_keys,
            process=process,
            log_path=log_path,
            workdir=workdir,
            authorized_keys_path=authorized_keys_path,
            address=listen_address,
            _log_file=log_file,
        )
        if _wait_for_banner(handle, startup_timeout):
            return handle
        handle.stop()
        if not any(marker in handle.log() for marker in _BIND_FAILED):
            break
    raise SshdError(f"sshd did not start; the end of its log ({log_path}):\n{handle.log()[-2000:]}")


def _keygen(path: Path, key_type: str, passphrase: str) -> None:
    path.unlink(missing_ok=True)
    _pub(path).unlink(missing_ok=True)
    # 2048-bit RSA takes a fraction of the 3072-bit default's time, and these keys guard only a local server.
    bits = ["-b", "2048"] if key_type == "rsa" else []
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, *bits, "-N", passphrase, "-C", path.name, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def _pub(private_key_path: Path) -> Path:
    return private_key_path.with_name(private_key_path.name + ".pub")


def _wait_for_banner(handle: SshdHandle, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and handle.process.poll() is None:
        try:
            with socket.create_connection((handle.address, handle.port), timeout=1) as probe:
                if probe.recv(4).startswith(b"SSH-"):
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False
