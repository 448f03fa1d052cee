"""SSH to target hosts: pinned host keys, in-memory credentials, bounded waits.

The only package that imports paramiko. It knows nothing of Django: callers pass plain values and get
`SSHError` with a `reason` and a sentence a person can act on. Secrets (passwords, private keys,
passphrases) never appear in a message, a repr or a log line.

- `login`: `connect` (TCP, the handshake against the pinned host key, the login), `scan_host_key`,
  `load_private_key`, `host_key_from_line`.
- `connection`: `Connection`, its commands and the limit on its channels.
- `shells`: the pool of long-lived shells a command without stdin runs in.
- `files`: file transfer over the connection's SFTP channels.
- `values`: `SSHError`, `HostKey`, `Target`, `CommandResult`.

Callers import from `jobs.ssh` itself; the parts are its layout.
"""

from jobs.ssh.connection import MAX_COMMAND_CHANNELS, Connection
from jobs.ssh.files import MAX_SFTP_CHANNELS, SFTP_STALL_TIMEOUT_S, OpenFiles
from jobs.ssh.login import KEEPALIVE_S, connect, host_key_from_line, load_private_key, scan_host_key
from jobs.ssh.shells import SHELL_COMMAND
from jobs.ssh.sockets import Forward as SocketForward
from jobs.ssh.values import MAX_OUTPUT_BYTES, CommandResult, HostKey, SSHError, Target

__all__ = [
    "KEEPALIVE_S",
    "MAX_COMMAND_CHANNELS",
    "MAX_OUTPUT_BYTES",
    "MAX_SFTP_CHANNELS",
    "SFTP_STALL_TIMEOUT_S",
    "SHELL_COMMAND",
    "CommandResult",
    "Connection",
    "HostKey",
    "OpenFiles",
    "SSHError",
    "SocketForward",
    "Target",
    "connect",
    "host_key_from_line",
    "load_private_key",
    "scan_host_key",
]
