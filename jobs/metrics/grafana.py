"""Change points and annotations pushed to Grafana as annotations (POST /api/annotations), when
BENCHWEB_GRAFANA_URL and BENCHWEB_GRAFANA_TOKEN are set; off otherwise.

A new ChangePoint or Annotation row sends one message once its transaction commits (jobs.push_to_grafana, by
name through jobs/messages.py), and a worker posts it: recording a run or saving a note never waits for Grafana.
A Grafana that cannot be reached, or answers 5xx or 429, raises Unreachable and the task retries with back-off
(jobs/tasks.py); one that refuses (another 4xx: a wrong token, a missing permission) is logged and not retried.

Each annotation is organisation-wide and tagged `benchweb`, its kind (`change-point` or `annotation`), and
`team:`, `host:`, `disk:`, `profile:`, `metric:` and `direction:` where they apply: the dashboard in
docs/grafana/ draws those of the team it shows. A change point found again as later runs are recorded is not
pushed twice (only a new row is), and one that detection later drops stays in Grafana.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from jobs import messages
from jobs.models import Annotation, ChangePoint

if TYPE_CHECKING:
    import requests

CHANGE_POINT = "change_point"
ANNOTATION = "annotation"
TIMEOUT_SECONDS = 10
log = logging.getLogger(__name__)


class Unreachable(Exception):
    """Grafana could not take the annotation now (no answer, 5xx, 429); worth trying again later."""


def enabled() -> bool:
    return bool(settings.GRAFANA_URL and settings.GRAFANA_TOKEN)


@receiver(post_save, sender=ChangePoint, dispatch_uid="push_new_change_points_to_grafana")
def _change_point_saved(sender: type[ChangePoint], instance: ChangePoint, created: bool, **kwargs: Any) -> None:
    if created:
        _push_after_commit(CHANGE_POINT, instance.pk)


@receiver(post_save, sender=Annotation, dispatch_uid="push_new_annotations_to_grafana")
def _annotation_saved(sender: type[Annotation], instance: Annotation, created: bool, **kwargs: Any) -> None:
    if created:
        _push_after_commit(ANNOTATION, instance.pk)


def _push_after_commit(kind: str, pk: int) -> None:
    if not enabled():
        return
    # robust: a broker that is down loses this push (logged) but never fails the request or task that saved the row.
    transaction.on_commit(
        lambda: messages.send(messages.PUSH_TO_GRAFANA, kind, pk, queue=settings.CELERY_TASK_DEFAULT_QUEUE),
        robust=True,
    )


def push(kind: str, pk: int) -> str:
    """Post one change point or annotation to Grafana; a one-line summary of what happened."""
    if not enabled():
        return f"{kind} {pk}: not pushed, BENCHWEB_GRAFANA_URL or BENCHWEB_GRAFANA_TOKEN is not set"
    body = payload(kind, pk)
    if body is None:
        return f"{kind} {pk}: deleted before it was pushed"
    import requests  # here, not at start-up (bench/startup.py)

    try:
        response = requests.post(
            f"{settings.GRAFANA_URL}/api/annotations",
            json=body,
            headers={"Authorization": f"Bearer {settings.GRAFANA_TOKEN}"},
            timeout=TIMEOUT_SECONDS,
        )
    except requests.RequestException as exc:
        raise Unreachable(f"{settings.GRAFANA_URL}: {exc}") from exc
    if response.status_code >= 500 or response.status_code == 429:
        raise Unreachable(f"{settings.GRAFANA_URL} answered {response.status_code}: {response.text[:200]}")
    if response.status_code >= 400:
        log.error(
            "Grafana refused the %s %s (%s: %s); check BENCHWEB_GRAFANA_TOKEN (a service account with the "
            "Editor role, or annotations:write)", kind, pk, response.status_code, response.text[:200],
        )  # fmt: skip
        return f"{kind} {pk}: refused by Grafana ({response.status_code})"
    return f"{kind} {pk}: Grafana annotation {_answered_id(response)}"


def payload(kind: str, pk: int) -> dict[str, Any] | None:
    """The body of POST /api/annotations for one row, or None if it is gone."""
    if kind == CHANGE_POINT:
        change = ChangePoint.objects.select_related("team", "disk__host").filter(pk=pk).first()
        return None if change is None else _change_point(change)
    note = Annotation.objects.select_related("team", "disk__host", "host").filter(pk=pk).first()
    return None if note is None else _annotation(note)


def _change_point(change: ChangePoint) -> dict[str, Any]:
    disk = change.disk
    return {
        "time": change.at_ms,
        "tags": [
            "benchweb", "change-point", f"team:{change.team.name}", f"host:{disk.host.name}", f"disk:{disk.label}",
            f"profile:{change.profile_name or 'no profile'}", f"metric:{change.metric}",
            f"direction:{change.direction}",
        ],
        "text": f"{change.headline()} on {disk}, from run {change.run_id} ({change.significance})",
    }  # fmt: skip


def _annotation(note: Annotation) -> dict[str, Any]:
    host = note.disk.host if note.disk else note.host
    tags = ["benchweb", "annotation", f"team:{note.team.name}"]
    tags += [f"host:{host.name}"] if host else []
    tags += [f"disk:{note.disk.label}"] if note.disk else []
    tags += ["expected"] if note.kind == Annotation.Kind.EXPECTED else []
    return {"time": round(note.at.timestamp() * 1000), "tags": tags, "text": f"{note.text} ({note.scope})"}


def _answered_id(response: requests.Response) -> str:
    try:
        return str(response.json().get("id", "?"))
    except ValueError:
        return "?"
