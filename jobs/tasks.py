"""Celery tasks: thin wrappers that take an id, hand the work to a use case (a run's steps: jobs/runs/launching.py,
watching.py, collecting.py, stopping.py, sweeping.py; jobs/runs/retention.py, jobs/schedules/dispatcher.py,
jobs/alerts/evaluate.py, jobs/notify/delivery.py) and return a short status."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Mapping
from typing import Any

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from celery.worker import state as worker_state
from celery.worker.control import inspect_command
from django.conf import settings
from django.db import connection

from jobs import messages
from jobs.alerts import evaluate as alerts
from jobs.api.models import IdempotencyKey
from jobs.metrics import grafana, load
from jobs.models import Team
from jobs.notify import delivery
from jobs.runs import collecting, driving, launching, observer, retention, sites, stopping, sweeping
from jobs.schedules import dispatcher
from jobs.sets import advancing

log = logging.getLogger(__name__)
# Beat sends a tick every BENCHWEB_TICK_SECONDS whatever became of the last one. In a busy worker, ticks that
# wait for the database would pile up, each holding a thread and all wanting its write lock; a tick that finds
# another under way in this process leaves the work to it and to the next one.
_TICKING = threading.Lock()


_STOP_SERVING = threading.Event()


@inspect_command(name=messages.SERVES)
def serves(state: Any) -> dict[str, object]:
    """This worker's answer to "which queues do you run?" (jobs/runs/sites.py asks every worker)."""
    consumer = state.consumer.task_consumer
    return {
        "queues": sorted(queue.name for queue in consumer.queues) if consumer else [],
        "every_site": settings.WORKER_EVERY_SITE,
    }


@inspect_command(name=messages.LOAD)
def load_now(state: Any) -> Mapping[str, object]:
    """This worker's load over the last minute and its headroom (jobs/metrics/load.py; the /metrics scrape asks)."""
    pool = getattr(state.consumer, "pool", None)
    threads = int(getattr(pool, "limit", 0) or 0)
    return load.METER.answer(threads_busy=len(worker_state.active_requests), threads=threads)


@worker_ready.connect
def start_load_meter(sender: Any = None, **kwargs: object) -> None:
    load.start_sampling(_STOP_SERVING)


@worker_ready.connect
def start_serving_every_site(sender: Any = None, **kwargs: object) -> None:
    """A worker started with BENCHWEB_WORKER_EVERY_SITE=1 consumes every site's queue, as hosts get sites."""
    if not settings.WORKER_EVERY_SITE or sender is None:
        return
    consuming = [queue.name for queue in sender.task_consumer.queues] if sender.task_consumer else []
    threading.Thread(
        target=sites.serve_every_site, args=(sender.hostname, consuming, _STOP_SERVING), name="every-site", daemon=True
    ).start()


@worker_shutdown.connect
def stop_serving_every_site(**kwargs: object) -> None:
    _STOP_SERVING.set()


@worker_shutdown.connect
def give_back_observed_hosts(**kwargs: object) -> None:
    """The hosts this worker observed are handed to a worker alive by the next tick's sweep or launch."""
    observer.stop_this_process()


@shared_task(name="jobs.health")
def health() -> dict[str, object]:
    """Proves a worker is consuming and reaches the database."""
    return {"worker": socket.gethostname(), "database": connection.vendor, "teams": Team.objects.count()}


@shared_task(name="jobs.launch_run")
def launch_run(run_id: int) -> str:
    log.info("run %s: launching from worker %s", run_id, socket.gethostname())
    return launching.launch(run_id)


@shared_task(name="jobs.launch_runs")
def launch_runs(run_ids: list[int], queue: str | None = None) -> str:
    """The beat tick's fan-out: one message in, one launch task out per run (on the same site queue), so
    launches run in parallel."""
    for run_id in run_ids:
        launch_run.apply_async(args=[run_id], queue=queue, priority=messages.priority_of(messages.LAUNCH_RUN))
    return f"sent {len(run_ids)} launches"


@shared_task(name="jobs.poll_run")
def poll_run(run_id: int) -> str:
    return sweeping.poll(run_id)


@shared_task(name="jobs.observe_host")
def observe_host(host_id: int, token: str) -> str:
    """A host to look after from now on: this process's observer steps it until its runs end (jobs/runs/observer.py)."""
    observer.of_this_process().adopt(host_id, token)
    return "adopted"


@shared_task(name="jobs.collect_run")
def collect_run(run_id: int) -> str:
    return collecting.collect(run_id)


@shared_task(name="jobs.stop_run")
def stop_run(run_id: int) -> str:
    return stopping.stop(run_id)


@shared_task(name="jobs.prune_results")
def prune_results() -> str:
    """Daily: forgets the API's idempotency keys past their 24 hours (jobs/api/models.py) and, when
    BENCHWEB_RETENTION_DAYS is set, prunes old runs' raw output and samples (jobs/runs/retention.py)."""
    forgotten = IdempotencyKey.forget_expired()
    if not settings.RETENTION_DAYS:
        return f"forgot {forgotten} idempotency keys"
    done = retention.prune(settings.RETENTION_DAYS)
    return f"pruned {done.runs} runs, {done.samples} samples, forgot {forgotten} idempotency keys"


@shared_task(
    name="jobs.push_to_grafana",
    autoretry_for=(grafana.Unreachable,),
    retry_backoff=5,
    retry_backoff_max=600,
    max_retries=6,
)
def push_to_grafana(kind: str, pk: int) -> str:
    """A new change point or annotation to Grafana (jobs/metrics/grafana.py); retried for an hour or so."""
    return grafana.push(kind, pk)


@shared_task(name="jobs.alerts_sweep")
def alerts_sweep() -> str:
    """Every minute: stale disks, and the safety net for alert checks a hook missed (jobs/alerts/evaluate.py)."""
    return alerts.sweep()


@shared_task(name="jobs.tick")
def tick() -> str:
    if not _TICKING.acquire(blocking=False):
        return "skipped: the previous tick is still under way in this worker"
    try:
        return dispatcher.tick()
    finally:
        _TICKING.release()


@shared_task(name="jobs.advance_set")
def advance_set(run_set_id: int) -> str:
    return advancing.advance(run_set_id)


@shared_task(name="jobs.drive_group")
def drive_group(run_set_id: int) -> str:
    """A group run by fio's client/server mode: its fio client, once every member's server is up."""
    return driving.drive(run_set_id)


@shared_task(name="jobs.deliver")
def deliver(delivery_id: int) -> str:
    return delivery.attempt(delivery_id)


@shared_task(name="jobs.send_due_deliveries")
def send_due_deliveries() -> str:
    return delivery.send_due()
