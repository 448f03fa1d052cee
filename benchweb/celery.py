from __future__ import annotations

import os

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")

app = Celery("benchweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def recycle_database_connections(task: Task | None = None, **kwargs: object) -> None:
    """Around every task, as Django does around every request: close this thread's connections that are past
    CONN_MAX_AGE (always, on SQLite, where it is 0) or broken, and keep the healthy ones for the next task.
    A task run eagerly runs inside its caller's transaction, which is not ours to close."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()
