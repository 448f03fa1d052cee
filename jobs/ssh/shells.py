"""The pool of long-lived shell sessions a connection runs its commands in (see Shell)."""

from __future__ import annotations

import secrets
import shlex
import threading
import time
from contextlib import suppress

import paramiko

from jobs.ssh.values import IDLE_WAIT_S, MAX_OUTPUT_BYTES, READ_CHUNK, CommandResult

# Started once per shell channel through the login shell (which reads its start-up files that one time); every
# command after it is a fork and exec of /bin/sh on the host, with no new SSH session and no login shell.
SHELL_COMMAND = "exec /bin/sh"
# A thread waiting for a command's output reads what came on stderr at least this often.
STDOUT_WAIT_S = 0.1


def exec_command(channel: paramiko.Channel, command: str, deadline: float) -> None:
    # exec_command waits for the server's reply without a limit of its own: closing the channel ends it.
    watchdog = threading.Timer(max(deadline - time.monotonic(), 0), channel.close)
    watchdog.start()
    try:
        channel.exec_command(command)
    finally:
        watchdog.cancel()


class ShellTimeout(Exception):
    pass


class ShellOverflow(Exception):
    pass


class ShellGone(Exception):
    pass


class Shell:
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
            raise ShellTimeout from None

    def _read_until(self, nonce: bytes, deadline: float, max_output: int) -> tuple[bytes, bytes, bytes]:
        """This command's stdout and stderr, and its status, once both ends are marked."""
        mark = b"\0" + nonce + b"\0"
        limit = max_output + 2 * (len(mark) + 8)
        channel = self.channel
        out_at = err_at = -1
        waited = b""  # what came on stdout while the last round slept in the channel
        while True:
            # A mark may straddle two reads: look again from just before where the last look ended.
            out_from = max(len(self._out) - len(mark), 0)
            err_from = max(len(self._err) - len(mark), 0)
            progressed = bool(waited)
            self._out += waited
            waited = b""
            while channel.recv_ready() and len(self._out) + len(self._err) <= limit:
                self._out += channel.recv(READ_CHUNK)
                progressed = True
            while channel.recv_stderr_ready() and len(self._out) + len(self._err) <= limit:
                self._err += channel.recv_stderr(READ_CHUNK)
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
                    raise ShellGone(f"the shell answered a status of {status[:40]!r}")
                if len(out) + len(err) > max_output:
                    raise ShellOverflow  # all of it came in before a look at the size
                return out, err, status
            if len(self._out) + len(self._err) > limit:
                raise ShellOverflow
            if not progressed:
                if not self.alive():
                    raise ShellGone("the shell on the host ended")
                if time.monotonic() >= deadline:
                    raise ShellTimeout
                if out_at < 0:
                    waited = self._wait_for_output(deadline)
                else:
                    time.sleep(IDLE_WAIT_S)  # only the mark on stderr is missing: it follows the one on stdout at once

    def _wait_for_output(self, deadline: float) -> bytes:
        """Sleep in the channel until the command prints on stdout (its end mark is printed there first), for at most
        STDOUT_WAIT_S so that what it prints on stderr meanwhile is read too. A worker holds dozens of threads
        waiting for commands while a fleet launches: each woke 200 times a second when they polled."""
        channel = self.channel
        channel.settimeout(max(min(STDOUT_WAIT_S, deadline - time.monotonic()), 0.001))
        try:
            return channel.recv(READ_CHUNK)  # b"" at the channel's end: the next round finds the shell gone
        except TimeoutError:
            return b""


class ShellPool:
    """Shells waiting for their next command: a command takes one (or the connection starts one) and gives it
    back when it ended cleanly; a shell that failed is closed instead."""

    def __init__(self) -> None:
        self._idle: list[Shell] = []
        self._lock = threading.Lock()

    def take_idle(self) -> Shell | None:
        """A live idle shell, closing the dead ones found on the way, or None."""
        with self._lock:
            while self._idle:
                shell = self._idle.pop()
                if shell.alive():
                    return shell
                shell.close()
        return None

    def give_back(self, shell: Shell) -> None:
        with self._lock:
            self._idle.append(shell)

    def close_idle(self) -> None:
        with self._lock:
            shells, self._idle = self._idle, []
        for shell in shells:
            shell.close()
