"""An authenticated connection: commands in pooled shells (jobs.ssh.shells) or on a channel of their own,
and files over SFTP (jobs.ssh.files). jobs.ssh.login opens it."""

from __future__ import annotations

import threading
import time
from types import TracebackType

import paramiko

from jobs.ssh import sockets
from jobs.ssh.files import FileTransfer
from jobs.ssh.shells import SHELL_COMMAND, Shell, ShellGone, ShellOverflow, ShellPool, ShellTimeout, exec_command
from jobs.ssh.values import IDLE_WAIT_S, MAX_OUTPUT_BYTES, READ_CHUNK, CommandResult, SSHError

_SEND_CHUNK = 2**15
# Commands and SFTP exchanges open channels on one connection at once (a persistent session carries every run
# on its host), and OpenSSH allows MaxSessions (10 by default) per connection: stay under it with these,
# jobs.ssh.files.MAX_SFTP_CHANNELS and KEPT_OPEN_CHANNELS (5 + 3 + 1).
MAX_COMMAND_CHANNELS = 5


class Connection(FileTransfer):
    """An authenticated SSH connection: commands, and files over SFTP (FileTransfer). Use as a context manager."""

    def __init__(self, transport: paramiko.Transport, where: str) -> None:
        super().__init__(transport, where)
        self._channels = threading.BoundedSemaphore(MAX_COMMAND_CHANNELS)
        self._shells = ShellPool()

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Connection {self.where}>"

    def close(self) -> None:
        self._close_sftp()
        self._shells.close_idle()
        self._transport.close()

    def forward_socket(self, remote_path: str, local_path: str) -> sockets.Forward:
        """A local Unix socket whose connections reach the host's socket `remote_path` (jobs.ssh.sockets)."""
        return sockets.Forward(self._transport, remote_path, local_path)

    def is_active(self) -> bool:
        """Whether the connection is still up as far as this side knows (keepalives notice a dead peer)."""
        return self._transport.is_active()

    def run(
        self, command: str, *, timeout: float = 60, stdin: bytes | None = None, max_output: int = MAX_OUTPUT_BYTES
    ) -> CommandResult:
        """Run one POSIX shell command string (the caller quotes every part) and wait for it, at most `timeout` s.

        Without stdin it runs as `/bin/sh -c` in a long-lived shell of this connection (see jobs.ssh.shells.Shell):
        no new SSH session and no login shell on the host. With stdin it gets a channel of its own, as `ssh host
        cmd` does."""
        deadline = time.monotonic() + timeout
        if not self._channels.acquire(timeout=timeout):
            raise self._command_timeout(timeout)
        try:
            if stdin is None:
                return self._run_in_shell(command, deadline, timeout, max_output)
            self._shells.close_idle()  # keeps this connection's channels under the server's MaxSessions
            return self._run(command, deadline, timeout, stdin, max_output)
        finally:
            self._channels.release()

    def _run_in_shell(self, command: str, deadline: float, timeout: float, max_output: int) -> CommandResult:
        shell = self._take_shell(deadline, timeout)
        try:
            result = shell.run(command, deadline, max_output)
        except ShellTimeout:
            shell.close()
            raise self._command_timeout(timeout) from None
        except ShellOverflow:
            shell.close()
            raise self._too_much_output(max_output) from None
        except (ShellGone, paramiko.SSHException, EOFError, OSError) as exc:
            shell.close()
            raise self._lost("running a command", exc) from exc
        self._shells.give_back(shell)
        return result

    def _take_shell(self, deadline: float, timeout: float) -> Shell:
        idle = self._shells.take_idle()
        if idle is not None:
            return idle
        channel = self._open_channel(deadline)
        shell = Shell(channel)
        try:
            exec_command(channel, SHELL_COMMAND, deadline)
            shell.wait_ready(deadline)
        except ShellTimeout:
            shell.close()
            raise self._command_timeout(timeout) from None
        except (ShellGone, ShellOverflow, paramiko.SSHException, EOFError, OSError) as exc:
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

    def _run(
        self, command: str, deadline: float, timeout: float, stdin: bytes | None, max_output: int
    ) -> CommandResult:
        channel = self._open_channel(deadline)
        try:
            exec_command(channel, command, deadline)
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
                chunk = channel.recv(READ_CHUNK)
                out.append(chunk)
                received += len(chunk)
                progressed = True
            while channel.recv_stderr_ready():
                chunk = channel.recv_stderr(READ_CHUNK)
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
                time.sleep(IDLE_WAIT_S)
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
