"""File transfer over SFTP: the half of a Connection that reads and writes files on the host.

A connection holds a few SFTP channels; each serves one exchange at a time and goes back to the idle list
after it, and a broken one is forgotten so the next exchange opens a new one.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import paramiko

from jobs.ssh.values import SSHError

# An SFTP request that makes no progress for this long means the connection is gone.
SFTP_STALL_TIMEOUT_S = 60.0
# An SFTP channel answers one request at a time, so a few of them let launches, looks and collections on one
# host overlap (jobs.ssh.connection keeps the command channels and these together under sshd's MaxSessions).
MAX_SFTP_CHANNELS = 3
# Besides them, at most one channel keeps files open (OpenFiles: the host's telemetry), counted in that budget too.
KEPT_OPEN_CHANNELS = 1


class FileTransfer:
    """Files on the host over this connection's SFTP channels; jobs.ssh.connection.Connection builds on it."""

    def __init__(self, transport: paramiko.Transport, where: str) -> None:
        self._transport = transport
        self.where = where
        # SFTP clients waiting for their next exchange; each serves one thread's exchange at a time, and a new
        # one is opened only while all the others are busy, up to MAX_SFTP_CHANNELS.
        self._idle_sftp: list[paramiko.SFTPClient] = []
        self._sftp_count = 0
        self._kept_open = 0
        self._sftp_changed = threading.Condition()

    def _close_sftp(self) -> None:
        with self._sftp_changed:
            clients, self._idle_sftp = self._idle_sftp, []
        for client in clients:
            with suppress(paramiko.SSHException, EOFError, OSError):
                client.close()

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

    def open_files(self, paths: dict[str, str]) -> OpenFiles:
        """These files (by key) kept open over an SFTP channel of their own, to be read again and again
        (OpenFiles); a file that is not there reads as None. Close it when done."""
        client = self._take_sftp(kept_open=True)
        try:
            handles = {key: _open_if_any(client, path) for key, path in paths.items()}
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._drop_sftp(client, kept_open=True)
            raise SSHError("channel", f"Could not open {', '.join(paths.values())} on {self.where}: {exc}") from exc
        return OpenFiles(self, client, handles)

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

    def _take_sftp(self, *, kept_open: bool = False) -> paramiko.SFTPClient:
        """An idle shared SFTP client, or a new one; `kept_open`: a new one of its own for OpenFiles (at most
        KEPT_OPEN_CHANNELS at once, besides the shared ones)."""
        with self._sftp_changed:
            if kept_open:
                if self._kept_open >= KEPT_OPEN_CHANNELS:
                    raise SSHError("channel", f"{self.where} already has its files kept open on a channel.")
                self._kept_open += 1
            else:
                while not self._idle_sftp and self._sftp_count >= MAX_SFTP_CHANNELS:
                    if not self._sftp_changed.wait(timeout=SFTP_STALL_TIMEOUT_S):
                        raise SSHError(
                            "timeout",
                            f"Every SFTP channel to {self.where} stayed busy for {SFTP_STALL_TIMEOUT_S:g} s. Retry "
                            "later.",
                        )
                if self._idle_sftp:
                    return self._idle_sftp.pop()
                self._sftp_count += 1
        try:
            client = paramiko.SFTPClient.from_transport(self._transport)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._drop_sftp(None, kept_open=kept_open)
            raise SSHError(
                "channel",
                f"{self.where} refused an SFTP session ({exc}): enable the sftp subsystem in its sshd_config.",
            ) from exc
        except BaseException:
            self._drop_sftp(None, kept_open=kept_open)
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

    def _drop_sftp(self, client: paramiko.SFTPClient | None, *, kept_open: bool = False) -> None:
        """Forget a broken SFTP channel (None: one that never opened), or one whose kept-open files are closed:
        the next exchange opens a new one."""
        if client is not None:
            with suppress(paramiko.SSHException, EOFError, OSError):
                client.close()
        with self._sftp_changed:
            if kept_open:
                self._kept_open -= 1
            else:
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


def _open_if_any(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPFile | None:
    """path opened for reading, or None when there is no such file."""
    try:
        return sftp.open(path, "rb")
    except FileNotFoundError:
        return None


class OpenFiles:
    """A few files kept open over an SFTP channel of their own, each read again from its start on every read.
    Made for /proc files, which the kernel writes afresh at each read from offset 0: a second of the host's
    telemetry then costs a read a file, not an open, a read and a close (half the worker's CPU, a third of the
    wait, measured on loopback). Not shared between threads; close() gives the channel back."""

    def __init__(
        self, transfer: FileTransfer, client: paramiko.SFTPClient, handles: dict[str, paramiko.SFTPFile | None]
    ) -> None:
        self.transfer = transfer
        self._client: paramiko.SFTPClient | None = client
        self._handles = handles

    def read(self, *, max_bytes: int) -> dict[str, bytes | None]:
        """Each file's content now, up to `max_bytes` (None: the file was not there when opened)."""
        if self._client is None:
            raise SSHError("channel", f"The files kept open on {self.transfer.where} were closed.")
        texts: dict[str, bytes | None] = {}
        try:
            for key, handle in self._handles.items():
                if handle is None:
                    texts[key] = None
                    continue
                handle.seek(0)
                texts[key] = handle.read(max_bytes)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self.close()
            raise SSHError("channel", f"Could not read the files kept open on {self.transfer.where}: {exc}") from exc
        return texts

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            self.transfer._drop_sftp(client, kept_open=True)
