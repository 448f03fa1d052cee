"""Around every Celery task the worker keeps a healthy database connection where CONN_MAX_AGE allows it
(PostgreSQL) and closes it where it does not (SQLite), as Django does around requests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection, transaction

import benchweb.celery  # noqa: F401  (connects the handlers)


def _task(eager: bool = False) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager))


@pytest.mark.django_db(transaction=True)
def test_a_task_reuses_its_threads_connection_only_where_conn_max_age_allows():
    connection.ensure_connection()
    before = connection.connection
    task_prerun.send(sender=None, task_id="t", task=_task())
    if connection.vendor == "postgresql":
        assert connection.settings_dict["CONN_MAX_AGE"] > 0
        assert connection.connection is before  # kept: no new connection for the next task
    else:
        assert connection.connection is None  # SQLite: CONN_MAX_AGE 0, closed as before


@pytest.mark.django_db(transaction=True)
def test_a_broken_connection_is_closed_before_the_next_task():
    connection.ensure_connection()
    connection.errors_occurred = True
    connection.connection.close()  # the server went away under it
    task_postrun.send(sender=None, task_id="t", task=_task())
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_an_eager_task_leaves_its_callers_transaction_alone():
    with transaction.atomic():
        connection.ensure_connection()
        before = connection.connection
        task_prerun.send(sender=None, task_id="t", task=_task(eager=True))
        assert connection.connection is before and not connection.needs_rollback
