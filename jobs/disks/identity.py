"""A disk's identity: recorded at registration (or first use), checked before every write."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import remote, safety, ssh
from jobs.hosts import connecting
from jobs.models import Disk, Run


class IdentityUnavailable(Exception):
    """The host could not say what a disk's target is; the message says why and what to do."""


def record_disk_identity(disk: Disk, user: Any = None) -> dict[str, Any]:
    """Ask the host what the disk's target is (the read-only safety probe) and store it as the disk's identity,
    which every later write run is checked against. Raises IdentityUnavailable and keeps the disk's old
    identity, with the reason in identity_note, when the host cannot be asked or the target is not there."""
    try:
        with connecting.connect(disk.host) as conn:
            probe = conn.run(safety.check_script(disk.target_path, disk.kind, writes=False), timeout=60)
    except (ssh.SSHError, remote.RemoteError) as exc:
        connecting.note_ssh_refusal(disk.host, exc, user=user, during=f"identity of disk {disk.pk}")
        raise _identity_not_recorded(disk, f"the host could not be asked: {exc}") from exc
    verdict = safety.judge(probe.stdout.decode(errors="replace"), kind=disk.kind, writes=False,
                           allow_destructive=False)  # fmt: skip
    found = verdict.facts.get("identity")
    if not found:
        raise _identity_not_recorded(disk, " ".join(verdict.reasons) or "the host named nothing that identifies it")
    store_identity(disk, found, user, how="recorded on request")
    return found


def identify_new_target(disk: Disk, user: Any = None) -> str:
    """After a disk is created or its target path or kind changed: forget what the old target was and record
    the new one. Returns "" or why it could not be recorded; the disk stays saved either way, and the first
    run that passes the safety check records it then."""
    Disk.objects.filter(pk=disk.pk).update(identity={}, identity_recorded_at=None)
    disk.identity, disk.identity_recorded_at = {}, None
    try:
        record_disk_identity(disk, user)
    except IdentityUnavailable as exc:
        return str(exc)
    return ""


def _identity_not_recorded(disk: Disk, why: str) -> IdentityUnavailable:
    note = (
        f"identity of {disk.target_path} not recorded ({timezone.now():%Y-%m-%d %H:%M} UTC): {why}; press "
        "Record identity on the disk page when the host answers (otherwise the first run records it)"
    )[:500]
    Disk.objects.filter(pk=disk.pk).update(identity_note=note)
    disk.identity_note = note
    return IdentityUnavailable(note)


def store_identity(disk: Disk, identity: dict[str, Any], user: Any, *, how: str, first_use: bool = False) -> bool:
    """Store what the probe found; on first use only if nothing was recorded meanwhile."""
    now = timezone.now()
    rows = Disk.objects.filter(pk=disk.pk)
    if first_use:
        rows = rows.filter(identity_recorded_at__isnull=True)
    if not rows.update(identity=identity, identity_recorded_at=now, identity_note=""):
        return False
    audit.record(disk.team, user, AuditEvent.Action.DISK_IDENTITY_RECORDED, disk, how=how,
                 device=disk.target_path, identity=safety.describe_identity(identity),
                 replaced=safety.describe_identity(disk.identity) if disk.identity else None)  # fmt: skip
    disk.identity, disk.identity_recorded_at, disk.identity_note = identity, now, ""
    return True


def note_verdict(run: Run, verdict: safety.Verdict) -> None:
    """What a run's safety verdict found of the disk's identity (at its launch, or in the wrapper's last check on
    the host): audit a write refused because a different disk sits at the path; trust the first run's disk that
    passes the check (and was never recorded, e.g. its host was down at registration)."""
    disk, found = run.disk, verdict.facts.get("identity")
    refused_write = not verdict.ok and disk.kind == Disk.Kind.BLOCK and verdict.facts["writes"]
    if refused_write and verdict.facts.get("identity_changes"):
        audit.record(disk.team, None, AuditEvent.Action.DISK_IDENTITY_REFUSED, disk, run=run.pk,
                     device=disk.target_path, registered=safety.describe_identity(disk.identity),
                     found=safety.describe_identity(found or {}),
                     changed=verdict.facts["identity_changes"])  # fmt: skip
    elif verdict.ok and found and disk.identity_recorded_at is None:
        store_identity(disk, found, run.created_by, how=f"first use by run {run.pk}", first_use=True)
