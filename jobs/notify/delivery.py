"""Alert events to the team's channels: one Delivery row per (channel, event), sent by a worker, retried with
back-off, never on a request or a run.

1. `publish` (called by the alerts after their transaction commits) stores a queued Delivery for each enabled
   channel that wants the event, then sends `jobs.deliver` with its id. It never waits for a receiver, and
   never raises (it passes the alert path's one boundary, jobs/alerts/boundary.py): a failure to store is
   logged, and one to send too, and the beat's sweep sends what is due.
2. `attempt` claims the delivery by a conditional UPDATE (due, not held by another attempt) and counts the
   attempt, hands the event to the channel's sender, and records the outcome: sent; or failed, due again after
   the next wait of BENCHWEB_DELIVERY_RETRY_SECONDS; or gave_up after the last, or at once when the receiver's
   address is one benchweb will not send to (BENCHWEB_CHANNEL_ALLOW_NETWORKS). The channel keeps how many
   attempts in a row failed (dead past BENCHWEB_CHANNEL_DEAD_AFTER) and the last error.
3. `send_due` (the beat, every BENCHWEB_DELIVERY_SWEEP_SECONDS) re-sends deliveries whose time has passed: a
   wait longer than SHORT_WAIT gets no message of its own, and a message lost with Redis is found again here.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from jobs import links, messages
from jobs.alerts import boundary
from jobs.models import AlertChannel, Delivery
from jobs.notify import senders, texts

log = logging.getLogger(__name__)
# Longer than the slowest attempt (a webhook's timeout, SMTP's), so only a crashed attempt's delivery is retaken.
LEASE = timedelta(minutes=2)
# Waits up to this long ride on the task message (a countdown); longer ones are left to the sweep, so no worker
# holds a message for an hour past the broker's visibility timeout.
SHORT_WAIT = 300.0
# A delivery this late is the sweep's: its own message should have come by now.
OVERDUE = timedelta(seconds=10)
SWEEP_BATCH = 500
LINK_FIELDS = ("url", "chart_url")


def publish(team_id: int, event: dict[str, Any]) -> None:
    """Queue `event` for the team's channels that want it, and send each delivery's task. It never raises: it
    passes the alert path's one boundary (jobs/alerts/boundary.py), which logs what went wrong; the alert is
    stored whatever happens here, its channels just do not hear of it."""
    failure = f"the event for team {team_id} was not queued for its channels"
    boundary.never_raise(_queue_and_send, team_id, event, failure=failure)


def _queue_and_send(team_id: int, event: dict[str, Any]) -> None:
    alert = event.get("alert") or {}
    channels = [
        channel
        for channel in AlertChannel.objects.filter(team_id=team_id, enabled=True)
        if channel.wants(str(event.get("event")), str(alert.get("kind")))
    ]
    with transaction.atomic():  # a savepoint if a caller's transaction is open: a failure here leaves it usable
        queued = _queue(channels, event)
    for delivery in queued:
        _send(delivery.pk)


def send_test(channel: AlertChannel, sender_name: str) -> Delivery:
    """A synthetic alert of kind "test" to this one channel, whatever its filters say and even if turned off."""
    now = timezone.now().isoformat().replace("+00:00", "Z")
    page = reverse("channel_detail", args=[channel.pk])
    event = {
        "event": "opened",
        "alert": {
            "id": None, "kind": "test", "state": "open",
            "title": f"test of channel {channel.name}",
            "summary": f"A test alert sent by {sender_name} from benchweb's Alert channels page. Nothing is wrong.",
            "team": channel.team.name, "host": None, "disk": None, "profile": None,
            "opened_at": now, "acknowledged_at": None, "resolved_at": None,
            "url": page, "chart_url": None, "run_urls": [],
        },
    }  # fmt: skip
    [delivery] = _queue([channel], event)
    _send(delivery.pk)
    return delivery


def attempt(delivery_id: int) -> str:
    now = timezone.now()
    lease = now + LEASE
    claimed = (
        Delivery.objects.filter(pk=delivery_id, state__in=[Delivery.State.QUEUED, Delivery.State.FAILED])
        .filter(next_attempt_at__lte=now + timedelta(seconds=1))
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .update(attempts=F("attempts") + 1, last_attempt_at=now, leased_until=lease)
    )
    if not claimed:
        return f"delivery {delivery_id}: not due, or taken by another attempt"
    delivery = Delivery.objects.select_related("channel").get(pk=delivery_id)
    channel = delivery.channel
    if channel.enabled or delivery.event.get("alert", {}).get("kind") == "test":
        outcome = senders.send(channel, {**delivery.payload(), "sent_at": now.isoformat().replace("+00:00", "Z")})
        return _record(delivery, lease, outcome)
    off = senders.Outcome(False, error="The channel was turned off before this delivery was sent.", final=True)
    return _record(delivery, lease, off, counts=False)


def send_due() -> str:
    now = timezone.now()
    due = list(
        Delivery.objects.filter(state__in=[Delivery.State.QUEUED, Delivery.State.FAILED])
        .filter(next_attempt_at__lte=now - OVERDUE)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    for pk in due:
        _send(pk)
    return f"sent {len(due)} due deliveries"


def _queue(channels: list[AlertChannel], event: dict[str, Any]) -> list[Delivery]:
    event = _with_absolute_links(event)
    summary = texts.subject(event).removeprefix("[benchweb] ")[:300]
    now = timezone.now()
    return Delivery.objects.bulk_create(
        [Delivery(channel=channel, event=event, summary=summary, next_attempt_at=now) for channel in channels]
    )


def _with_absolute_links(event: dict[str, Any]) -> dict[str, Any]:
    alert = dict(event.get("alert") or {})
    for name in LINK_FIELDS:
        if alert.get(name):
            alert[name] = links.absolute(alert[name])
    alert["run_urls"] = [links.absolute(url) for url in alert.get("run_urls") or []]
    return {**event, "alert": alert}


def _record(delivery: Delivery, lease: Any, outcome: senders.Outcome, counts: bool = True) -> str:
    """The attempt's outcome on the delivery (sent, failed and due again, or given up: after the last wait, or at
    once when the outcome is final) and on its channel, unless it said nothing of the receiver (`counts`)."""
    finished = timezone.now()
    waits = settings.DELIVERY_RETRY_SECONDS
    last = outcome.sent or outcome.final or delivery.attempts > len(waits)
    wait = None if last else waits[delivery.attempts - 1]
    if outcome.sent:
        state = Delivery.State.SENT
    else:
        state = Delivery.State.GAVE_UP if wait is None else Delivery.State.FAILED
    # The delivery's outcome and its channel's together: no one reads a sent delivery whose channel says otherwise.
    with transaction.atomic():
        Delivery.objects.filter(pk=delivery.pk, leased_until=lease).update(
            state=state,
            response=outcome.response[:300],
            error=outcome.error,
            sent_at=finished if outcome.sent else None,
            next_attempt_at=finished + timedelta(seconds=wait) if wait is not None else None,
            leased_until=None,
        )
        channels = AlertChannel.objects.filter(pk=delivery.channel_id)
        if outcome.sent:
            channels.update(failures_in_a_row=0, last_sent_at=finished)
        elif counts:  # a channel turned off said nothing about its receiver
            channels.update(
                failures_in_a_row=F("failures_in_a_row") + 1, last_error=outcome.error, last_failed_at=finished
            )
    if wait is not None and wait <= SHORT_WAIT:
        _send(delivery.pk, countdown=wait)
    return f"delivery {delivery.pk} to channel {delivery.channel_id}: {state} after attempt {delivery.attempts}"


def _send(delivery_id: int, countdown: float = 0) -> None:
    try:
        messages.offer(messages.DELIVER, delivery_id, queue=settings.CELERY_TASK_DEFAULT_QUEUE, countdown=countdown)
    except Exception as exc:  # the broker is away: the beat's sweep sends it once it is back
        log.warning("delivery %s: could not send its task (%s); the beat's sweep will", delivery_id, exc)
