"""One SSH session per host in each worker process, kept open and shared by every run on that host.

A run used to cost its host a login for every look at it (26 a run-minute). Here a worker logs in to a host
once: launches, the host's observation steps, collections and cancels of every run on it share that one
connection as channels, and the observation reads files over its one SFTP channel, so nothing new is started
on the host to look at a run. A connection is keyed by everything it was opened with (address, port, user,
the pinned key and a digest of the credential): approving a new key or changing the credential opens a new
one, checked by jobs/ssh/'s rules before anything secret is sent, and the old one is closed once idle.

A connection that fails is dropped, and the next use opens a new one: the runs go on on their hosts
meanwhile, as they always did. Connections idle for IDLE_CLOSE_S are closed. A forked child starts with an
empty pool: a connection belongs to the process that opened it.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from jobs import ssh

IDLE_CLOSE_S = 600.0
# An error for which the connection itself is suspect: drop it, the next use logs in again.
_CONNECTION_ERRORS = frozenset({"channel", "timeout", "unreachable"})


def key_of(name: object, target: ssh.Target) -> str:
    """Everything a connection was opened with, the secrets only as a digest (kept in memory, never shown)."""
    key = target.host_key
    parts = (
        str(name), target.address, str(target.port), target.username,
        key.key_type if key else "", key.key_b64 if key else "",
        target.password or "", target.private_key or "", target.passphrase or "",
    )  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass
class _Entry:
    connection: ssh.Connection
    used_at: float
    users: int = 0


class Pool:
    """Live connections by key, for the threads of one process."""

    def __init__(self, idle_close_s: float = IDLE_CLOSE_S) -> None:
        self.idle_close_s = idle_close_s
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        # One login at a time per key: threads that want the same host wait for that login, not make their own.
        self._opening: dict[str, threading.Lock] = {}
        self._pid = os.getpid()
        self.logins = 0

    @contextmanager
    def session(
        self, key: str, target: ssh.Target, on_login: Callable[[], None] | None = None
    ) -> Iterator[ssh.Connection]:
        """The live connection for `key`, opened (and counted in `logins`, and told to `on_login`) only when there
        is none. An SSHError that makes the connection suspect drops it on its way out."""
        connection, logged_in = self._checkout(key, target)
        if logged_in and on_login is not None:
            on_login()
        try:
            yield connection
        except ssh.SSHError as exc:
            if exc.reason in _CONNECTION_ERRORS or not connection.is_active():
                self.drop(key, connection)
            raise
        finally:
            self._checkin(key, connection)

    def drop(self, key: str, connection: ssh.Connection) -> None:
        """Forget `connection` and close it once nobody uses it; the next session logs in again."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.connection is connection:
                del self._entries[key]
                idle = entry.users == 0
            else:
                idle = True
        if idle:
            connection.close()
        else:
            # Its other users are failing on it too, or finishing; the last one out does not put it back.
            threading.Thread(target=_close_later, args=(connection,), daemon=True).start()

    def close_all(self) -> None:
        with self._lock:
            entries, self._entries = list(self._entries.values()), {}
        for entry in entries:
            entry.connection.close()

    def open_count(self) -> int:
        with self._lock:
            return len(self._entries)

    def _checkout(self, key: str, target: ssh.Target) -> tuple[ssh.Connection, bool]:
        self._after_fork()
        self._close_idle()
        with self._lock:
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry.connection.is_active():
                    entry.users += 1
                    entry.used_at = time.monotonic()
                    return entry.connection, False
                stale = self._entries.pop(key, None)
            if stale is not None:
                stale.connection.close()
            connection = ssh.connect(target)
            with self._lock:
                self.logins += 1
                self._entries[key] = _Entry(connection, time.monotonic(), users=1)
            return connection, True

    def _checkin(self, key: str, connection: ssh.Connection) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.connection is connection:
                entry.users -= 1
                entry.used_at = time.monotonic()

    def _close_idle(self) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [key for key, entry in self._entries.items()
                    if entry.users == 0 and now - entry.used_at > self.idle_close_s]  # fmt: skip
            closing = [self._entries.pop(key).connection for key in idle]
        for connection in closing:
            connection.close()

    def _after_fork(self) -> None:
        if os.getpid() != self._pid:
            with self._lock:
                # The parent's sockets are the parent's: never write to them from here, just forget them.
                self._entries, self._opening, self._pid, self.logins = {}, {}, os.getpid(), 0


def _close_later(connection: ssh.Connection, grace_s: float = 30.0) -> None:
    time.sleep(grace_s)
    connection.close()


# The process's pool: every worker thread shares it.
POOL = Pool()
