"""The sweep: runs no worker has looked at lately get their step sent again, and `poll`, where a swept run
that is collecting or cancelled lands (so do messages sent before the hosts had observers).

Every live chain of steps (a launch's re-attaching, a host's observer) moves its runs' heartbeat; the beat tick
calls `sweep` (jobs/schedules/dispatcher.py), which only moves heartbeats and sends messages, never a state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from jobs import messages
from jobs.models import Host, Run
from jobs.runs import collecting, sites, steps, stopping

# A run no worker looked at for this long is picked up again by the sweep (see sweep() for the bound); a chain of
# re-attaching launches sends its next attempt within launching.RELAUNCH_MAX_S, which stays under it.
STALE_AFTER = timedelta(seconds=30)


# A queued run no worker has taken for this long says so (and which queue it waits on).
UNCLAIMED_AFTER = timedelta(seconds=60)


def poll(run_id: int) -> str:
    """Look after one run that is past its launch: the sweep (a run whose heartbeat stopped) and messages sent
    before the host's observation steps existed come here. A running run is the host's observer's to watch
    (jobs/runs/watching.py; one is started if the host has none), a collecting one is collected, a cancelled
    one stopped."""
    run = Run.objects.select_related("disk__host").get(pk=run_id)
    if run.state not in (Run.State.RUNNING, Run.State.COLLECTING):
        return run.state
    if run.cancel_requested:
        return stopping.stop(run_id)
    if run.state == Run.State.COLLECTING:
        return collecting.collect(run_id)
    steps.watch(run.disk.host)
    return run.state


def _hand_over_unobserved_hosts(now: Any) -> int:
    """Hosts with running runs that no observer holds (given back by a worker that stopped) or whose observer has not
    stepped them for steps.OBSERVER_STALE_AFTER (its worker was killed): handed to a worker alive now, rather than
    when their runs' heartbeats are STALE_AFTER old. A worker killed so costs its runs about OBSERVER_STALE_AFTER
    plus a tick of not being looked at."""
    stale = now - steps.OBSERVER_STALE_AFTER
    unobserved = (
        Host.objects.filter(disks__runs__state=Run.State.RUNNING)
        .filter(Q(observer_token="") | Q(observed_at__isnull=True) | Q(observed_at__lt=stale))
        .distinct()
    )
    return sum(steps.watch(host, now=now) for host in unobserved)


# A queued or collecting run waits behind its site's backlog (see sweep()) this long at most, and is then sent
# again anyway: the backlog may hold no message of its own. A worker killed with -9 takes the messages it had taken
# with it (Redis gives them back only after the visibility timeout, an hour), and a site kept busy by other work may
# not empty its queue for minutes (the fleet bench's kill left one launch queued for 5 minutes). Twice STALE_AFTER:
# such a run is sent again STALE_AFTER + BACKLOG_PATIENCE after its last sign of life, and a site only behind gets at
# most one second message a run in that time, a no-op once the first has done its step.
BACKLOG_PATIENCE = 2 * STALE_AFTER


# The states whose step's message waits in the site's queue until a worker takes it (a launching run's next attempt
# is a countdown message, which a worker holds from the start).
_QUEUED_MESSAGES = (Run.State.QUEUED, Run.State.COLLECTING)


class _Backlog:
    """How many messages wait in each site's queue, asked of the broker once a sweep (None: the broker did not say,
    and the sweep sends as it would without knowing)."""

    def __init__(self) -> None:
        self._waiting: dict[str, int | None] = {}

    def of(self, site: str) -> int | None:
        if site not in self._waiting:
            self._waiting[site] = messages.waiting(sites.queue_for(site))
        return self._waiting[site]


def _behind_text(run: Run, waiting: int, now: Any) -> str:
    """A queued run waiting behind other messages in its site's queue, as its page says it."""
    site = run.disk.host.site
    since = f" for {(now - run.queued_at).total_seconds():.0f} s" if run.queued_at else ""
    others = "1 message" if waiting == 1 else f"{waiting} messages"
    waited = f"queued on {sites.queue_for(site)}{since}, behind {others} no worker has taken yet"
    if sites.unserved(site):
        return f"{sites.waiting_text(site)} ({waited})"
    return f"{waited}: the site's workers are busy"


def sweep(now: Any = None) -> int:
    """Pick up runs no worker has looked at lately (a worker died, a message was lost, a host's observer or a run's
    chain of re-attaching launches ended without finishing its run), and hosts whose observer is gone.

    A live chain writes the run's heartbeat at every attempt and sends the next one within launching.RELAUNCH_MAX_S
    (< STALE_AFTER), so a heartbeat older than STALE_AFTER means no chain is left (or one attempt hangs on a
    frozen session: a second chain is then harmless, as every step is a conditional update and a start is
    guarded by the host's atomic mkdir). The beat tick calls this every BENCHWEB_TICK_SECONDS, so a dead chain
    is picked up within STALE_AFTER + one tick period of its last heartbeat (35 s by default), plus the time
    its message waits for a worker. Queued and launching runs get a launch (which re-attaches by UUID), running
    ones a new observer for their host (whose steps move every running run's heartbeat there,
    jobs/runs/watching.py), collecting and cancelled ones a poll (a collect, a stop); a run with no heartbeat
    at all is stale at once. Only the sweep that moved a
    run's heartbeat on sends it, so two beat processes do not start two chains.

    A queued or collecting run whose site's queue still holds messages no worker has taken is not sent again: its
    own message is most likely among them (a worker holds a message it took until the task ends), so the site's
    workers are behind, not gone, and a second message would only lengthen the queue and, for a launch, double
    the work on the host (`_Backlog`). Its heartbeat moves, and it is looked at again once the queue is empty, or
    BACKLOG_PATIENCE after the sweep first held it back: a worker killed with the message gives it back to no queue.
    """
    now = now or timezone.now()
    stale = Run.objects.filter(
        Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True), state__in=Run.ACTIVE_STATES
    )
    count = 0
    backlog = _Backlog()
    watched: dict[int, tuple[Host, list[int]]] = {}
    runs = stale.select_related("disk__host").only(
        "pk", "state", "heartbeat_at", "queued_at", "backlog_since", "cancel_requested", "disk__host__site"
    )
    for run in runs:
        if run.state == Run.State.RUNNING and not run.cancel_requested:
            watched.setdefault(run.disk.host_id, (run.disk.host, []))[1].append(run.pk)
            continue
        fields: dict[str, Any] = {"heartbeat_at": now, "backlog_since": None}
        waiting = backlog.of(run.disk.host.site) if run.state in _QUEUED_MESSAGES else 0
        if run.state == Run.State.QUEUED and waiting:
            # Held back or sent again past BACKLOG_PATIENCE: the site's workers are behind, and its page says so.
            fields["explanation"] = _behind_text(run, waiting, now)
        elif run.state == Run.State.QUEUED and run.queued_at and now - run.queued_at > UNCLAIMED_AFTER:
            # No worker took the launch: most often nobody listens on this site's queue.
            site = run.disk.host.site
            queue = sites.queue_for(site)
            waited = f"queued on {queue} for {(now - run.queued_at).total_seconds():.0f} s"
            fields["explanation"] = (
                f"{sites.waiting_text(site)} ({waited})"
                if sites.unserved(site)
                else f"{waited} and no worker has taken it: is a worker running with -Q {queue}? "
                f"(celery -A benchweb worker -Q {queue})"
            )
        if waiting and (run.backlog_since is None or now - run.backlog_since < BACKLOG_PATIENCE):
            fields["backlog_since"] = run.backlog_since or now
            Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(**fields)
            continue
        if not Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(**fields):
            continue  # another sweep, or the run's own chain, moved it on meanwhile
        if run.state in (Run.State.QUEUED, Run.State.LAUNCHING):
            steps.send("launch", run)
        else:
            steps.send("poll", run)  # collect or stop it
        count += 1
    for host, run_ids in watched.values():
        # A running run's heartbeat is moved by its host's observer: that observer is gone, or too slow. One UPDATE
        # for the host's stale runs, and a new observer unless a live one holds the host (steps.watch's conditional
        # UPDATE on the host: an observer only slow drops the host at its next step).
        moved = (
            Run.objects.filter(pk__in=run_ids, state=Run.State.RUNNING)
            .filter(Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True))
            .update(heartbeat_at=now)
        )
        if moved:
            steps.watch(host, now=now)
        count += moved
    # After the runs': a host handed on just above has a fresh observed_at, so it is not handed on twice.
    return count + _hand_over_unobserved_hosts(now)
