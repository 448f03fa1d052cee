"""How a run's step hands it to the next one: a task message by name (jobs/messages.py) on its host's site queue.

Every step of a run (jobs/runs/queueing.py, launching.py, watching.py, collecting.py, stopping.py, and the sweep
in sweeping.py) sends the next one through here, so no step imports another to start it. A message carries only
an id: the database says what to do when it arrives (docs/decisions/0002-database-is-the-truth.md)."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs import messages
from jobs.hosts import connecting
from jobs.models import Host, Run
from jobs.runs import sites
from jobs.runs.sites import queue_for

# A collection or stop that could not reach the host is tried again this much later.
RETRY_S = 6.0


# A host whose observer has not stepped it for this long has none left (its worker was killed or lost the database;
# a full step comes every second, every 6 s while its host does not answer): the next launch or the sweep hands the
# host to a worker alive (jobs/runs/sweeping.py `sweep`).
OBSERVER_STALE_AFTER = timedelta(seconds=10)


# A claimed run's explanation until a worker takes its launch (states.claim sets it); a run of a site no worker
# serves says so instead, as its launch is sent.
QUEUED_TEXT = "queued for a worker"


STEP_MESSAGES = {
    "launch": messages.LAUNCH_RUN,
    "poll": messages.POLL_RUN,
    "collect": messages.COLLECT_RUN,
    "stop": messages.STOP_RUN,
}


def send(step: str, run: Run, countdown: float = 0) -> None:
    """launch, poll (the sweep's look: jobs/runs/sweeping.py `poll`), collect or stop one run, on its host's site
    queue."""
    messages.send(STEP_MESSAGES[step], run.pk, queue=queue_for(run.disk.host.site), countdown=countdown)


def send_advance(run_set_id: int, site: str) -> None:
    """A member of a set ended: its set's next step (jobs/sets/advancing.py), on its host's queue."""
    messages.send(messages.ADVANCE_SET, run_set_id, queue=queue_for(site))


def send_drive(run_set_id: int, site: str) -> None:
    """A member of a group run by fio's client/server mode is up (or ended): the group's driver
    (jobs/runs/driving.py) looks whether its fio client can start, or its members must be called off."""
    messages.send(messages.DRIVE_GROUP, run_set_id, queue=queue_for(site))


def send_launch(run: Run, site: str) -> None:
    """The launch of one run just claimed."""
    send("launch", run)
    _say_if_unserved(site, [run.pk])


def send_launches(by_run: dict[int, str]) -> None:
    """One message per site for many launches (run id -> its host's site): a worker of that site fans it out, so
    the tick publishes once per site and every launch runs near its host."""
    by_site: dict[str, list[int]] = {}
    for run_id, site in by_run.items():
        by_site.setdefault(site, []).append(run_id)
    for site, run_ids in by_site.items():
        queue = queue_for(site)
        messages.send(messages.LAUNCH_RUNS, run_ids, queue, queue=queue)
        _say_if_unserved(site, run_ids)


def _say_if_unserved(site: str, run_ids: list[int]) -> None:
    """Runs just queued for a site that no running worker serves say so at once, rather than "queued for a
    worker" (the message stays in the site's queue: a worker started there takes it)."""
    if sites.unserved(site):
        Run.objects.filter(pk__in=run_ids, state=Run.State.QUEUED, explanation=QUEUED_TEXT).update(
            explanation=sites.waiting_text(site)
        )


def retry(run: Run, step: str, exc: Exception) -> None:
    """A collection or stop could not reach the host; the run goes on there whatever happened to our connection:
    say so, and send the step again after RETRY_S. The heartbeat moves too: this chain is alive, so the sweep
    must not start a second one."""
    connecting.note_ssh_refusal(run.disk.host, exc, run=run)
    Run.objects.filter(pk=run.pk).update(explanation=f"{run.state}; the last attempt to {step} failed: {exc}",
                                         heartbeat_at=timezone.now())  # fmt: skip
    send(step, run, countdown=RETRY_S)


def watch(host: Host, *, now: Any = None) -> bool:
    """Make sure one worker's observer looks after `host`'s running runs (jobs/runs/observer.py): hand the host to
    one unless a live one holds it. The new token replaces the old one's in one conditional UPDATE, so of two
    callers at once only one hands it on, and an observer that was only slow drops the host at its next step. True
    when this call handed it on."""
    now = now or timezone.now()
    token = os.urandom(16).hex()
    started = (
        Host.objects.filter(pk=host.pk)
        .filter(Q(observer_token="") | Q(observed_at__isnull=True) | Q(observed_at__lt=now - OBSERVER_STALE_AFTER))
        .update(observer_token=token, observed_at=now)
    )
    if started:
        transaction.on_commit(lambda: _hand_to_an_observer(host, token))
    return bool(started)


def _hand_to_an_observer(host: Host, token: str) -> None:
    """The host, under `token`, to whichever worker of its site takes the message (an observer holding an older
    token drops the host at its next step)."""
    messages.send(messages.OBSERVE_HOST, host.pk, token, queue=queue_for(host.site))
