"""Celery tasks: thin wrappers that take an id and hand the work to jobs.services."""

from __future__ import annotations

import socket

from celery import shared_task
from django.db import connection

from jobs.models import Team


@shared_task(name="jobs.health")
def health() -> dict[str, object]:
    """Proves a worker is consuming and reaches the database."""
    return {"worker": socket.gethostname(), "database": connection.vendor, "teams": Team.objects.count()}
