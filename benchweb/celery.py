from __future__ import annotations

import logging
import os

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")

app = Celery("benchweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
log = logging.getLogger(__name__)
_restore_unacked = kombu_redis.QoS.restore_unacked


def _restore_unacked_unless_collected(self: kombu_redis.QoS, client: object = None) -> object:
    """Guard for Celery 5.7.0 + kombu 5.7.0 (no later release to pin): after a lost broker connection the
    worker first collects the connection (which drops the transport's client) and then closes it, and the
    close tries to push the messages it held back to the queue through that dropped client. The
    AttributeError ('NoneType' object has no attribute 'hostname') is not a connection error, so it ended
    the worker whenever it held a message: any run polling (a poll waiting for its countdown) or launching.

    Redis is unreachable at that moment anyway, and every unacknowledged message is also kept in Redis's
    unacked hash (when Redis kept its data), which redelivers it after the visibility timeout; the beat sweep
    re-polls an active run whose heartbeat is older than jobs.services.STALE_AFTER long before that, and the
    run state machine makes the late duplicate a no-op. So this skips only that impossible push and lets the
    worker reconnect (test: tests/test_broker_restart.py).
    Remove it once Celery no longer closes a collected connection (celery/worker/consumer/consumer.py,
    on_connection_error_after_connected)."""
    if client is None and getattr(self.channel.connection, "client", None) is None:
        log.warning(
            "broker connection lost holding %d unacknowledged message(s); Redis keeps them and redelivers them "
            "after the visibility timeout, and the sweep re-polls their runs sooner",
            len(self._delivered),
        )
        self._delivered.clear()
        return None
    return _restore_unacked(self, client)


kombu_redis.QoS.restore_unacked = _restore_unacked_unless_collected


@task_prerun.connect
@task_postrun.connect
def recycle_database_connections(task: Task | None = None, **kwargs: object) -> None:
    """Around every task, as Django does around every request: close this thread's connections that are past
    CONN_MAX_AGE (always, on SQLite, where it is 0) or broken, and keep the healthy ones for the next task.
    A task run eagerly runs inside its caller's transaction, which is not ours to close."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()
