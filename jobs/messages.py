"""Work sent to the Celery workers, by the task names jobs/tasks.py registers.

A run's steps send launches, observation steps, collections and stops through jobs/runs/steps.py, and
jobs/notify/delivery.py sends alert deliveries; the tasks call the use cases. Sending by name keeps that
one-way: this module imports nothing of the app, so the use cases need not import the tasks module (and no
function-level import is needed to dodge a cycle). A test checks that every name here is a registered task.

benchweb's Celery app is imported with the first message, not with this module: Celery and kombu take a third of
a second to import, which a process that sends nothing (a migrate, a manage.py command) need not pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from celery import Celery

LAUNCH_RUN = "jobs.launch_run"
LAUNCH_RUNS = "jobs.launch_runs"
POLL_RUN = "jobs.poll_run"
OBSERVE_HOST = "jobs.observe_host"
COLLECT_RUN = "jobs.collect_run"
STOP_RUN = "jobs.stop_run"
PUSH_TO_GRAFANA = "jobs.push_to_grafana"
DELIVER = "jobs.deliver"
ADVANCE_SET = "jobs.advance_set"
DRIVE_GROUP = "jobs.drive_group"
NAMES = (
    LAUNCH_RUN,
    LAUNCH_RUNS,
    POLL_RUN,
    OBSERVE_HOST,
    COLLECT_RUN,
    STOP_RUN,
    PUSH_TO_GRAFANA,
    DELIVER,
    ADVANCE_SET,
    DRIVE_GROUP,
)


# The order in which a worker takes the messages waiting in its queue. On Redis a worker takes priority 0 first, then
# 3, 6 and 9 (kombu's priority steps, a list each; RabbitMQ would need queues declared with x-max-priority). A run's
# own launch and collection are the bulk of a busy site's queue: they wait, in the order they came, behind the
# messages that do something for many runs or for a person (a host's observation, a sweep's poll, a stop, a set's
# next step, a tick's fan-out of launches). Without it a killed worker's hosts were observed again only once the
# launches ahead of their handover were done: 200 s after the kill in issue 34's fault run.
BULK = 3
PRIORITIES = {LAUNCH_RUN: BULK, COLLECT_RUN: BULK}


def priority_of(name: str) -> int:
    """The broker priority of a message of task `name` (0, taken first, unless PRIORITIES says otherwise)."""
    return PRIORITIES.get(name, 0)


def _app() -> Celery:
    from benchweb.celery import app

    return app


def send(name: str, *args: object, queue: str, countdown: float = 0) -> None:
    """Publish one task message on `queue`, to run `countdown` seconds from now."""
    _app().send_task(name, args=list(args), queue=queue, countdown=countdown or None, priority=priority_of(name))


# The remote-control command each worker answers with the queues it consumes and whether it serves every site
# (registered by jobs/tasks.py; jobs/runs/sites.py asks it).
SERVES = "benchweb_serves"
# The remote-control command each worker answers with its load over the last minute and its headroom (registered
# by jobs/tasks.py; the /metrics scrape asks it instead of a plain ping: jobs/metrics/workers.py).
LOAD = "benchweb_load"


def ask_workers(command: str, timeout: float) -> dict[str, object]:
    """Every worker's answer to a broadcast remote-control `command`, by worker name, within `timeout` seconds;
    waits the whole timeout. A broker that cannot be reached raises kombu's OperationalError at once: the connection
    is tried once, not retried as task messages are (six seconds of retries would hold up whoever asked)."""
    with _app().connection_for_write(connect_timeout=timeout) as connection:
        connection.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)
        replies: list[dict[str, object]] = _app().control.broadcast(
            command, reply=True, timeout=timeout, connection=connection
        )
    return {name: answer for reply in replies for name, answer in reply.items()}


def waiting(queue: str, timeout: float = 2.0) -> int | None:
    """How many messages wait in `queue` on the broker, taken by no worker yet (a worker holds what it took until
    the task ends: acks_late, one message a thread); 0 for a queue the broker does not have, None when the broker
    cannot be asked within about `timeout` seconds."""
    from kombu.exceptions import ChannelError, KombuError, OperationalError

    try:
        with _app().connection_for_write(connect_timeout=timeout) as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)
            try:
                _name, count, _consumers = connection.default_channel.queue_declare(queue=queue, passive=True)
            except ChannelError:
                return 0  # no such queue: nothing was ever sent there, or it was emptied and removed
            return int(count)
    except (OperationalError, KombuError, OSError):
        return None


def consume(queue: str, worker: str, timeout: float) -> bool:
    """Ask one worker (by name) to consume `queue` too (Celery's add_consumer); True when it said it will."""
    replies = _app().control.add_consumer(queue, destination=[worker], reply=True, timeout=timeout)
    return any("ok" in answer for reply in replies or [] for answer in reply.values())


# One quick retry, then the caller hears the broker is away; the beat's sweep finds the work in the database.
QUICK_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def offer(name: str, *args: object, queue: str, countdown: float = 0) -> None:
    """Publish one task message without waiting for a broker that is away (send waits ~20 s for one) and without
    a result to keep: for work the database already holds, such as an alert delivery."""
    _app().send_task(
        name, args=list(args), queue=queue, countdown=countdown or None, ignore_result=True, retry_policy=QUICK_RETRY,
        priority=priority_of(name),
    )  # fmt: skip
