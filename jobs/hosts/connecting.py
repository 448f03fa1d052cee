"""Reaching a host: the pinned-key SSH connection, the connection test, scanning and approving the host key,
and recording refusals."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import errors, sessions, ssh
from jobs.alerts import boundary
from jobs.alerts import evaluate as alerts
from jobs.models import Host, Run

log = logging.getLogger(__name__)


def connect(host: Host, during: str = "a connection") -> ssh.Connection:
    """A connection of its own, closed by the caller (`with connect(host) as conn:`)."""
    connection = ssh.connect(_target(host))
    _presented_approved_key(host, during)
    return connection


@contextmanager
def session(host: Host) -> Iterator[ssh.Connection]:
    """The worker's persistent session to `host` (jobs/sessions.py), for launches, observation, collection and
    cancels: one login per host per worker process, whatever the runs. The same refusals as `connect` first."""
    target = _target(host)
    key = sessions.key_of(host.pk, target)
    with sessions.POOL.session(key, target, on_login=lambda: _logged_in(host)) as conn:
        yield conn


def _logged_in(host: Host) -> None:
    """A new session to `host` in this worker process: logged, so that a worker's log says which hosts (and sites)
    it reached (a site's hosts are reached only by that site's workers: docs/operations/sites.md)."""
    log.info("logged in to host %s (site %s): the session is kept for this worker process", host.name,
             host.site or "none")  # fmt: skip
    _presented_approved_key(host, "a worker's login")


def _presented_approved_key(host: Host, during: str) -> None:
    """A login passed the pinned-key check: a host-key-changed alert of the host no longer holds."""
    boundary.after_commit(alerts.host_key_presented, host, during)


def _target(host: Host) -> ssh.Target:
    if not host.enabled:
        raise ssh.SSHError("disabled", f"host {host.name} is disabled: enable it on its page to run benchmarks")
    if not host.has_pinned_key:
        raise ssh.SSHError(
            "host_key_unknown",
            f"host {host.name} has no approved host key: open the host page, scan its key, compare the "
            "fingerprint and approve it",
        )
    if host.credential is None:
        raise ssh.SSHError("bad_credential", f"host {host.name} has no credential: choose one on the host page")
    return host.ssh_target()


CONNECTION_TEST = "uname -sr; command -v fio && fio --version"


@dataclass
class ConnectionTest:
    ok: bool
    message: str
    output: str = ""


def connection_test(host: Host, user: Any = None) -> ConnectionTest:
    if not host.has_pinned_key:
        return ConnectionTest(
            False,
            "This host has no approved host key: scan and approve the host key first "
            "(on the host page), then test again. Nothing was sent to the host.",
        )
    if host.credential is None:
        return ConnectionTest(False, "This host has no credential: choose or add one on the edit page.")
    command = CONNECTION_TEST
    if host.os == Host.OS.AIX:
        command += f"; command -v {shlex.quote(host.ndisk64_path or 'ndisk64')}"
    try:
        # Inside the try: a credential that cannot be decrypted is an answer too, never an error page.
        with ssh.connect(host.ssh_target(), timeout=15) as conn:
            _presented_approved_key(host, "a connection test")
            result = conn.run(command, timeout=30)
    except ssh.SSHError as exc:
        note_ssh_refusal(host, exc, user=user)
        return ConnectionTest(False, str(exc))
    output = (result.stdout + result.stderr).decode("utf-8", errors="replace").strip()
    if "fio-" in output:
        return ConnectionTest(True, f"Connected and logged in as {host.username}; fio is installed.", output)
    return ConnectionTest(
        True,
        f"Connected and logged in as {host.username}, but fio was not found on the PATH: "
        "install it (Debian/Ubuntu: sudo apt-get install fio).",
        output,
    )


def scan_host_key(host: Host, user: Any = None) -> ssh.HostKey:
    key = ssh.scan_host_key(host.address, host.port)
    if host.has_pinned_key and key.key_b64 != host.host_key_b64:
        audit.record(host.team, user, AuditEvent.Action.HOST_KEY_CHANGED, host, pinned=host.host_key_fingerprint,
                     presented=key.fingerprint, presented_type=key.key_type)  # fmt: skip
        boundary.after_commit(alerts.host_key_refused, host, key.fingerprint, "a key scan")
    elif host.has_pinned_key and key.key_type == host.host_key_type:
        _presented_approved_key(host, "a key scan")
    Host.objects.filter(pk=host.pk).update(
        scanned_key_type=key.key_type,
        scanned_key_b64=key.key_b64,
        scanned_key_fingerprint=key.fingerprint,
        scanned_at=timezone.now(),
    )
    host.refresh_from_db()
    return key


def approve_host_key(host: Host, user: Any, fingerprint: str) -> None:
    """Pin the scanned key, but only the one whose fingerprint the person saw."""
    if not host.scanned_key_b64 or host.scanned_key_fingerprint != fingerprint:
        raise errors.FieldRefused("fingerprint", "The scanned key changed since you saw it: scan again and compare.")
    Host.objects.filter(pk=host.pk).update(
        host_key_type=host.scanned_key_type,
        host_key_b64=host.scanned_key_b64,
        host_key_fingerprint=host.scanned_key_fingerprint,
        host_key_approved_at=timezone.now(),
        host_key_approved_by=user if getattr(user, "is_authenticated", False) else None,
    )
    audit.record(host.team, user, AuditEvent.Action.HOST_KEY_APPROVED, host, fingerprint=fingerprint,
                 key_type=host.scanned_key_type, replaced=host.host_key_fingerprint or None)  # fmt: skip
    host.refresh_from_db()
    boundary.after_commit(alerts.host_key_approved, host)


# A run whose polls meet a changed key retries every few seconds: the audit log gets one event per host,
# presented key and run (or connection test) in this window, not one per attempt.
REFUSAL_AUDIT_EVERY = timedelta(hours=1)


def note_ssh_refusal(
    host: Host, exc: Exception, run: Run | None = None, user: Any = None, during: str = "connection test"
) -> AuditEvent | None:
    """Record a run, connection test or identity probe refused because the host presented another key than the
    approved one."""
    if not isinstance(exc, ssh.SSHError) or exc.reason != "host_key_changed":
        return None
    presented = exc.presented
    during = f"run {run.pk}" if run else during
    fingerprint = presented.fingerprint if presented else ""
    boundary.after_commit(alerts.host_key_refused, host, fingerprint, during)
    recent = AuditEvent.objects.filter(
        action=AuditEvent.Action.HOST_KEY_REFUSED,
        object_type="host",
        object_id=str(host.pk),
        details__presented=fingerprint,
        details__during=during,
        created_at__gte=timezone.now() - REFUSAL_AUDIT_EVERY,
    )
    if recent.exists():
        return None
    # A run's refusal is put to whoever started it (none for a scheduled run); a test's to whoever tested.
    actor = user or (run.created_by if run else None)
    return audit.record(
        host.team, actor, AuditEvent.Action.HOST_KEY_REFUSED, host,
        address=f"{host.address}:{host.port}", during=during,
        pinned=exc.pinned.fingerprint if exc.pinned else host.host_key_fingerprint,
        presented=fingerprint, presented_type=presented.key_type if presented else "",
    )  # fmt: skip
