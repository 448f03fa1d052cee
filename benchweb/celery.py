from __future__ import annotations

import ctypes
import logging
import os
from typing import TYPE_CHECKING, Any, cast

from celery import Celery, Task
from celery.schedules import crontab
from celery.signals import task_postrun, task_prerun, worker_init
from django.conf import settings
from django.db import close_old_connections

if TYPE_CHECKING:
    from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")

app = Celery("benchweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
log = logging.getLogger(__name__)


def beat_schedule() -> dict[str, dict[str, Any]]:
    """What beat sends. It only ticks and sweeps: the runs and schedules in the database say what is due
    (docs/decisions/0003-schedules-owned-by-benchweb.md). Declared here rather than in the settings, so that a
    process that sends no task (a migrate, any manage.py command) does not import Celery for its crontab."""
    schedule: dict[str, dict[str, Any]] = {
        "tick": {"task": "jobs.tick", "schedule": settings.TICK_SECONDS, "options": {"expires": 30}},
        # Alerts: stale disks, and a safety net for conditions a hook missed (jobs/alerts/evaluate.py sweep).
        "alerts": {
            "task": "jobs.alerts_sweep",
            "schedule": settings.ALERTS_SWEEP_SECONDS,
            "options": {"expires": max(settings.ALERTS_SWEEP_SECONDS - 5, 1)},
        },
        # Deliveries whose message was lost (Redis restarted) are sent again.
        "deliveries": {
            "task": "jobs.send_due_deliveries",
            "schedule": settings.DELIVERY_SWEEP_SECONDS,
            "options": {"expires": 30},
        },
        # Daily: the API's idempotency keys past their 24 hours, and old results when BENCHWEB_RETENTION_DAYS is set.
        "prune-results": {
            "task": "jobs.prune_results",
            "schedule": crontab(hour=3, minute=17),
            "options": {"expires": 6 * 3600},
        },
    }
    return schedule


app.conf.beat_schedule = beat_schedule()


# glibc's malloc gives each thread an arena of its own (up to 8 a core) and keeps what every arena once held: a
# worker whose threads each parse a fio output at once (120 s of status documents: some MB decoded) grows by their
# sum and stays there. Two arenas keep a fleet's worker under its 300 MB; an operator's MALLOC_ARENA_MAX wins.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h


@worker_init.connect
def limit_malloc_arenas(**kwargs: object) -> bool:
    """At most MALLOC_ARENAS malloc arenas in this worker process, set before its pool's threads start; False where
    there is nothing to set (not glibc, or the environment says already)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False  # musl, macOS: another allocator
    if not mallopt(_M_ARENA_MAX, MALLOC_ARENAS):
        return False
    log.info("malloc arenas limited to %d in this worker (MALLOC_ARENA_MAX sets another number)", MALLOC_ARENAS)
    return True


@worker_init.connect
def guard_kombu_qos(**kwargs: object) -> None:
    """Only a worker holds unacknowledged messages, so only a worker patches kombu's Redis QoS (see
    _restore_unacked_unless_collected): the web, beat and manage.py never import the Redis transport for it."""
    from kombu.transport import redis as kombu_redis

    if kombu_redis.QoS.restore_unacked is _restore_unacked_unless_collected:
        return  # guarded already
    originals["restore_unacked"] = kombu_redis.QoS.restore_unacked
    originals["ack"] = kombu_redis.QoS.ack
    originals["reject"] = kombu_redis.QoS.reject
    # Deliberate monkeypatches of kombu's QoS (see the docstring below), which mypy forbids on methods.
    kombu_redis.QoS.restore_unacked = _restore_unacked_unless_collected  # type: ignore[method-assign]
    kombu_redis.QoS.ack = _ack_unless_collected  # type: ignore[method-assign]
    kombu_redis.QoS.reject = _reject_unless_collected  # type: ignore[method-assign]


originals: dict[str, Any] = {}


def _collected(qos: kombu_redis.QoS) -> bool:
    """The channel's connection was collected after the broker went away: it has no client to talk through."""
    return getattr(qos.channel.connection, "client", None) is None


def _restore_unacked_unless_collected(self: kombu_redis.QoS, client: object = None) -> object:
    """Guard for Celery 5.7.0 + kombu 5.7.0 (no later release to pin): after a lost broker connection the
    worker first collects the connection (which drops the transport's client) and then closes it, and the
    close tries to push the messages it held back to the queue through that dropped client. The
    AttributeError ('NoneType' object has no attribute 'hostname') is not a connection error, so it ended
    the worker whenever it held a message: any run polling (a poll waiting for its countdown) or launching.
    A task that was running when the connection went, and finishes after the collect, acks (or rejects) its
    message through the same dropped channel, which ends the worker the same way ('NoneType' object has no
    attribute 'client'); the ack and reject guards below are for that path.

    Redis is unreachable at that moment anyway, and every unacknowledged message is also kept in Redis's
    unacked hash (when Redis kept its data), which redelivers it after the visibility timeout; the beat sweep
    re-polls an active run whose heartbeat is older than jobs.runs.sweeping.STALE_AFTER long before that, and
    the run state machine makes the late duplicate a no-op. So this skips only that impossible push and lets the
    worker reconnect (test: tests/stack/test_broker_restart.py).
    Remove it once Celery no longer closes a collected connection (celery/worker/consumer/consumer.py,
    on_connection_error_after_connected)."""
    if client is None and _collected(self):
        # kombu declares `_delivered = None` on the class and sets an OrderedDict in QoS.__init__.
        delivered = cast("dict[object, object]", self._delivered)
        log.warning(
            "broker connection lost holding %d unacknowledged message(s); Redis keeps them and redelivers them "
            "after the visibility timeout, and the sweep re-polls their runs sooner",
            len(delivered),
        )
        delivered.clear()
        return None
    return originals["restore_unacked"](self, client)


def _ack_unless_collected(self: kombu_redis.QoS, delivery_tag: object) -> None:
    if _collected(self):
        log.warning("a task finished after the broker connection was lost; its message is redelivered later, a no-op")
        from kombu.transport import virtual

        virtual.QoS.ack(self, delivery_tag)  # forget it here only: Redis cannot be told
        return
    originals["ack"](self, delivery_tag)


def _reject_unless_collected(self: kombu_redis.QoS, delivery_tag: object, requeue: bool = False) -> None:
    if _collected(self):
        log.warning("a task was rejected after the broker connection was lost; Redis redelivers its message")
        from kombu.transport import virtual

        virtual.QoS.ack(self, delivery_tag)
        return
    originals["reject"](self, delivery_tag, requeue)


@task_prerun.connect
@task_postrun.connect
def recycle_database_connections(task: Task | None = None, **kwargs: object) -> None:
    """Around every task, as Django does around every request: close this thread's connections that are past
    CONN_MAX_AGE (always, on SQLite, where it is 0) or broken, and keep the healthy ones for the next task.
    A task run eagerly runs inside its caller's transaction, which is not ours to close."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()
