"""An alert's life: opened when its condition holds (or opened again, counted, when it returns), acknowledged by
a person, resolved when the condition clears or a regression is triaged as expected.

Every move is a conditional UPDATE on the state it leaves, and the partial unique index on (team, condition)
among unresolved alerts is the last guard: two workers that see one failure at once make one alert. Each move
publishes one event to the team's channels (jobs.notify) once its transaction commits, so a rolled-back run
announces nothing; the hand-over passes the alert path's one boundary (jobs/alerts/boundary.py), so a delivery
that fails never fails a move."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, When
from django.urls import reverse
from django.utils import timezone

from jobs import links, notify
from jobs.alerts import boundary
from jobs.models import Alert, AlertRule, ChangePoint

Kind = Alert.Kind


@dataclass
class Found:
    """A condition seen to hold, with what is behind it."""

    team_id: int
    kind: str
    condition: str
    title: str
    summary: str
    host_id: int | None = None
    disk_id: int | None = None
    profile_id: int | None = None
    profile_name: str = ""
    schedule_id: int | None = None
    change_point_id: int | None = None
    run_set_id: int | None = None
    run_ids: list[int] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        return {
            "title": self.title[:200], "summary": self.summary, "host_id": self.host_id, "disk_id": self.disk_id,
            "profile_id": self.profile_id, "profile_name": self.profile_name, "schedule_id": self.schedule_id,
            "change_point_id": self.change_point_id, "run_set_id": self.run_set_id,
        }  # fmt: skip


def raise_alert(found: Found, now: datetime | None = None) -> Alert | None:
    """Open an alert for `found`, open its resolved one again, or note that an open one's condition still holds.
    None when the team turned this kind off."""
    if not AlertRule.of(found.team_id, found.kind).enabled:
        return None
    now = now or timezone.now()
    try:
        with transaction.atomic():
            alert, event = _open_or_reopen(found, now)
            if alert is not None and event is not None and found.run_ids:
                alert.runs.add(*found.run_ids)  # an alert is never seen without the runs that opened it
    except IntegrityError:
        # Another worker opened it between our look and our write: it is open, so this is a sighting.
        alert, event = _unresolved(found.team_id, found.condition), None
    if alert is None:
        return None
    if event is None:
        Alert.objects.filter(pk=alert.pk).update(last_seen_at=now, **found.fields())
        if found.run_ids:
            alert.runs.add(*found.run_ids)
    if event:
        announce(alert, event)
    return alert


def _open_or_reopen(found: Found, now: datetime) -> tuple[Alert | None, str | None]:
    current = _unresolved(found.team_id, found.condition)
    if current is not None:
        return current, None
    last = (
        Alert.objects.filter(team_id=found.team_id, condition=found.condition, state=Alert.State.RESOLVED)
        .order_by("-resolved_at", "-pk")
        .first()
    )
    if last is None:
        alert = Alert.objects.create(
            team_id=found.team_id, kind=found.kind, condition=found.condition, opened_at=now, last_seen_at=now,
            **found.fields(),
        )  # fmt: skip
        return alert, "opened"
    reopened = Alert.objects.filter(pk=last.pk, state=Alert.State.RESOLVED).update(
        state=Alert.State.OPEN, opened_at=now, last_seen_at=now, reopened_count=last.reopened_count + 1,
        acknowledged_at=None, acknowledged_by=None, resolved_at=None, resolution="", **found.fields(),
    )  # fmt: skip
    if not reopened:
        raise IntegrityError("the alert was opened again meanwhile")
    last.refresh_from_db()
    return last, "reopened"


def unresolved_among(team_id: int, conditions: Iterable[str]) -> set[str]:
    """Which of `conditions` have an unresolved alert, in one query: the checks after a run's end clear only
    those, instead of each asking."""
    return set(
        Alert.objects.filter(team_id=team_id, condition__in=list(conditions), state__in=Alert.UNRESOLVED).values_list(
            "condition", flat=True
        )
    )


def _unresolved(team_id: int, condition: str) -> Alert | None:
    return Alert.objects.filter(team_id=team_id, condition=condition, state__in=Alert.UNRESOLVED).first()


def clear(
    team_id: int, condition: str, reason: str, now: datetime | None = None, *, unresolved: Collection[str] | None = None
) -> Alert | None:
    """Resolve the unresolved alert of `condition`, saying why; None when there was none. `unresolved`: the
    conditions known to have one (unresolved_among, read once for several checks); None: look."""
    if unresolved is not None and condition not in unresolved:
        return None
    current = _unresolved(team_id, condition)
    if current is None or not _resolve(current, reason, now or timezone.now()):
        return None
    return current


def _resolve(alert: Alert, reason: str, now: datetime) -> bool:
    moved = Alert.objects.filter(pk=alert.pk, state__in=Alert.UNRESOLVED).update(
        state=Alert.State.RESOLVED, resolved_at=now, resolution=reason[:300]
    )
    if moved:
        alert.refresh_from_db()
        announce(alert, "resolved")
    return bool(moved)


def acknowledge(alert: Alert, user: Any) -> bool:
    """A person has seen it: it stays unresolved (and keeps its one slot), but no longer counts as open."""
    moved = Alert.objects.filter(pk=alert.pk, state=Alert.State.OPEN).update(
        state=Alert.State.ACKNOWLEDGED, acknowledged_at=timezone.now(), acknowledged_by=user
    )
    alert.refresh_from_db()
    if moved:
        announce(alert, "acknowledged")
    return bool(moved)


def mark_expected(alert: Alert, user: Any, text: str = "") -> list[Any]:
    """Triage a regression as expected: each metric's worse change point behind it becomes an annotation and its
    series' new baseline (ChangePoint.mark_expected), and the alert is resolved saying so. Returns the
    annotations."""
    behind = ChangePoint.objects.filter(
        disk=alert.disk, profile_name=alert.profile_name, direction=ChangePoint.Direction.WORSE, expected=False
    ).order_by("metric", "-at_ms")
    latest: dict[str, ChangePoint] = {}
    for change in behind:
        latest.setdefault(change.metric, change)
    annotations = [change.mark_expected(user, text) for change in latest.values()]
    who = getattr(user, "username", "") or "someone"
    _resolve(alert, f"marked expected by {who}: now an annotation and the new baseline", timezone.now())
    return annotations


def save_rule(rule: AlertRule) -> None:
    """Store a team's rule; turning a kind off resolves its unresolved alerts, which nothing would clear now."""
    rule.save()
    if not rule.enabled:
        for alert in Alert.objects.filter(team_id=rule.team_id, kind=rule.kind, state__in=Alert.UNRESOLVED):
            _resolve(alert, "this kind of alert was turned off in the team's alert rules", timezone.now())


def open_count(team_id: int) -> int:
    return Alert.objects.filter(team_id=team_id, state=Alert.State.OPEN).count()


def ordered(alerts: Any) -> Any:
    """Open first, then acknowledged, then resolved; newest first within each."""
    rank = Case(When(state=Alert.State.OPEN, then=0), When(state=Alert.State.ACKNOWLEDGED, then=1), default=2)
    return alerts.order_by(rank, "-opened_at", "-pk")


# ----------------------------------------------------------------------------- events


def announce(alert: Alert, event: str) -> None:
    """Publish `event` for the alert's channels once the transaction commits; a delivery never fails a move."""
    payload = {"event": event, "alert": describe(alert)}
    failure = f"alert {alert.pk}: its {event} event was not published"
    boundary.after_commit(notify.publish, alert.team_id, payload, failure=failure)


def describe(alert: Alert) -> dict[str, Any]:
    """The alert as the channels and the API give it (the event format agreed with jobs.notify)."""
    run_ids = list(alert.runs.order_by("-pk").values_list("pk", flat=True)[:20])
    chart = reverse("disk_detail", args=[alert.disk_id]) + "#disk-charts" if alert.disk_id else None
    if alert.run_set_id:  # a group's alert: its series' totals against their limits
        chart = reverse("group_history", args=[alert.run_set_id])
    return {
        "id": alert.pk,
        "kind": str(alert.kind),
        "state": str(alert.state),
        "title": alert.title,
        "summary": alert.summary,
        "team": alert.team.name,
        "host": alert.host.name if alert.host else (alert.disk.host.name if alert.disk else None),
        "disk": str(alert.disk) if alert.disk else None,
        "profile": alert.profile_name or None,
        "opened_at": iso(alert.opened_at),
        "acknowledged_at": iso(alert.acknowledged_at),
        "resolved_at": iso(alert.resolved_at),
        "url": links.absolute(reverse("alert_detail", args=[alert.pk])),
        "chart_url": links.absolute(chart) if chart else None,
        "run_urls": [links.absolute(reverse("run_detail", args=[pk])) for pk in run_ids],
    }


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if moment else None
