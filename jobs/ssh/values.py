"""The values every part of jobs.ssh shares: the error, a host key, a target, a command's result."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_OUTPUT_BYTES = 256 * 2**20
READ_CHUNK = 2**20
IDLE_WAIT_S = 0.005


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
