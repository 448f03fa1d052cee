"""Stopping a run before it ends by itself: a person's (or a paused schedule's) cancel, and the stop on the host.

A pending or queued run is cancelled at once (no worker holds it yet); an active one is marked, and a running
one is stopped on its host by its own task (`jobs.stop_run`: TERM to the wrapper's whole session, KILL after
10 s), then cleaned up."""

from __future__ import annotations

from django.utils import timezone

from jobs import remote, ssh
from jobs.hosts import connecting
from jobs.models import Run
from jobs.runs import cleaning, states, steps
from jobs.runs.states import finish


def cancel(run: Run) -> Run:
    """A person's (or a paused schedule's) cancel: states.call_off."""
    return states.call_off(run, states.CANCELLED_BEFORE_START)


def stop(run_id: int) -> str:
    """Stop a cancelled run on its host (TERM to its whole session, KILL after 10 s) and clean up."""
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    if run.state not in (Run.State.RUNNING, Run.State.COLLECTING) or not run.cancel_requested:
        return run.state
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    try:
        with connecting.session(run.disk.host) as conn:
            remote.cancel(conn, run.remote_dir)
            cleaning.clean_up(conn, run)
            finish(run, Run.State.CANCELLED, _stopped_on_host(run))
    except (ssh.SSHError, remote.RemoteError) as exc:
        steps.retry(run, "stop", exc)
    return run.state


def _stopped_on_host(run: Run) -> str:
    """A cancelled run stopped before its start (the wrapper was still waiting for not_before) says that
    nothing ran, and why: a paused schedule, or a person's cancel. A run called off for a reason of its own
    (states.call_off) says that reason."""
    if run.explanation.startswith(states.CALLING_OFF):
        return run.explanation.removeprefix(states.CALLING_OFF) + "; stopped on the host"
    if not (run.not_before and run.not_before > timezone.now()):
        return "cancelled: the benchmark was stopped on the host"
    paused = states.paused_schedule(run)
    why = states.paused_explanation(paused) if paused else states.CANCELLED_BEFORE_START
    return f"{why}; the wrapper waiting on the host for its start was stopped, nothing ran"
