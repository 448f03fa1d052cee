"""Idempotency keys on the two endpoints that start something (jobs/api/idempotency.py): a retry with the same
`Idempotency-Key` answers what the first request started and starts nothing; the same key with another body is a
422; a bad key a 400; keys are a team's and an endpoint's; a refused request keeps none; they expire after 24 hours
and the daily prune forgets them; and two requests at once with one key start one run (PostgreSQL, real threads).

What a start sends (its launch) goes out on commit: the tests count the callbacks a request left to run on commit,
and the concurrent one counts the launch messages in the real broker."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
import redis
from django.db import connection, connections, transaction
from django.test import Client

from benchweb.celery import beat_schedule
from jobs import messages as jobs_messages
from jobs import tasks
from jobs.api.models import IdempotencyKey
from jobs.models import Disk, Run, RunSet
from jobs.runs.sites import queue_for
from tests.factories import ProfileFactory
from tests.openapi import schema
from tests.sets.sweeps import sweep_profile
from tests.world import World, client_for, make_world

pytestmark = pytest.mark.django_db

KEY = "Idempotency-Key"


@pytest.fixture
def ours() -> tuple[World, Client]:
    world, secret = make_world("ours")
    return world, client_for(secret)


def start(api: Client, body: object, key: str | None, path: str = "/api/v1/runs/"):
    headers = {KEY: key} if key is not None else {}
    return api.post(path, json.dumps(body), content_type="application/json", headers=headers)


def test_a_retry_with_the_same_key_and_body_answers_the_same_run_as_it_is_now_and_starts_nothing(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    with django_capture_on_commit_callbacks() as first_sent:
        first = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "ci-4711-check")
    assert first.status_code == 201, first.content
    assert first.json()["state"] == "queued" and "Idempotent-Replayed" not in first
    assert first_sent  # its launch
    runs = Run.objects.count()
    assert start(api, {}, None, f"/api/v1/runs/{first.json()['id']}/cancel/").json()["state"] == "cancelled"

    with django_capture_on_commit_callbacks() as replay_sent:
        # The same body in another key order and spacing is the same request.
        replay = api.post("/api/v1/runs/", f'{{ "profile": {world.profile.pk},  "disk": {world.disk.pk} }}',
                          content_type="application/json", headers={KEY: "ci-4711-check"})  # fmt: skip

    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    assert replay.json()["id"] == first.json()["id"] and replay.json().keys() == first.json().keys()
    assert replay.json()["state"] == "cancelled"  # as it is now
    assert Run.objects.count() == runs and replay_sent == []


def test_the_same_key_with_another_body_is_a_422_that_names_the_header_and_starts_nothing(ours):
    world, api = ours
    first = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "nightly")
    other = ProfileFactory(team=world.team, name="other", rw="randwrite")
    runs = Run.objects.count()

    refused = start(api, {"disk": world.disk.pk, "profile": other.pk}, "nightly")

    assert first.status_code == 201 and refused.status_code == 422
    detail = refused.json()["detail"]
    assert "Idempotency-Key" in detail and "different body" in detail and "Use a new Idempotency-Key" in detail
    assert Run.objects.count() == runs


@pytest.mark.parametrize(
    ("value", "says"),
    [("", "printable"), ("   ", "printable"), ("k" * 256, "at most 255"), ("tab\there", "printable"),
     ("clé", "printable"), ('""', "inside its quotes")],
    ids=["empty", "blank", "256 long", "a tab", "not ascii", "quoted empty"],
)  # fmt: skip
def test_a_bad_key_is_a_400_naming_the_header_and_nothing_is_started_or_kept(ours, value, says):
    world, api = ours
    runs = Run.objects.count()

    refused = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, value)

    assert refused.status_code == 400
    assert says in refused.json()[KEY][0]
    assert Run.objects.count() == runs and not IdempotencyKey.objects.exists()


def test_a_255_character_key_is_taken_and_the_drafts_quoted_form_is_the_same_key(ours):
    world, api = ours
    body = {"disk": world.disk.pk, "profile": world.profile.pk}
    longest = start(api, body, "k" * 255)
    quoted = start(api, body, '"8e03978e-40d5-43e8-bc93-6894a57f9324"')
    bare = start(api, body, "8e03978e-40d5-43e8-bc93-6894a57f9324")

    assert longest.status_code == quoted.status_code == bare.status_code == 201
    assert "Idempotent-Replayed" not in quoted and bare["Idempotent-Replayed"] == "true"
    assert bare.json()["id"] == quoted.json()["id"] != longest.json()["id"]


def test_a_key_is_one_teams_another_team_with_the_same_key_starts_its_own_run(ours):
    world, api = ours
    theirs, their_secret = make_world("theirs")
    mine = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "shared-key")

    their = start(client_for(their_secret), {"disk": theirs.disk.pk, "profile": theirs.profile.pk}, "shared-key")

    assert mine.status_code == their.status_code == 201 and "Idempotent-Replayed" not in their
    assert Run.objects.get(pk=their.json()["id"]).team == theirs.team
    # Nor does their key answer them with our run: the same body as ours is refused on its disk, not replayed.
    assert start(client_for(their_secret), {"disk": world.disk.pk, "profile": world.profile.pk},
                 "shared-key").status_code == 422  # fmt: skip


def test_a_refused_request_keeps_no_key_and_its_corrected_retry_with_the_key_starts_the_run(ours):
    world, api = ours
    sweep = sweep_profile(world.team)
    runs = Run.objects.count()

    missing = start(api, {"disk": world.disk.pk}, "retry-me")  # refused by the serializer
    a_sweep = start(api, {"disk": world.disk.pk, "profile": sweep.pk}, "retry-me")  # by the use case
    assert missing.status_code == a_sweep.status_code == 400
    assert "profile" in missing.json() and "POST /api/v1/sets/" in a_sweep.json()["profile"][0]
    assert Run.objects.count() == runs and not IdempotencyKey.objects.exists()

    corrected = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "retry-me")

    assert corrected.status_code == 201 and "Idempotent-Replayed" not in corrected
    assert IdempotencyKey.objects.get().object_id == corrected.json()["id"]


def test_a_key_expires_after_24_hours_the_daily_prune_forgets_it_and_it_may_start_anew(ours, settings):
    world, api = ours
    settings.RETENTION_DAYS = 0
    assert beat_schedule()["prune-results"]["task"] == "jobs.prune_results"  # daily, retention or not
    first = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "old").json()
    start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "young")
    IdempotencyKey.objects.filter(key="old").update(created_at=first_time(first) - timedelta(hours=24, seconds=1))

    # Expired and not yet forgotten: a different body with it starts a run, no 422.
    other = ProfileFactory(team=world.team, name="other")
    anew = start(api, {"disk": world.disk.pk, "profile": other.pk}, "old")
    assert anew.status_code == 201 and "Idempotent-Replayed" not in anew and anew.json()["id"] != first["id"]
    assert IdempotencyKey.objects.get(key="old").object_id == anew.json()["id"]

    IdempotencyKey.objects.filter(key="old").update(created_at=first_time(first) - timedelta(hours=30))
    assert tasks.prune_results() == "forgot 1 idempotency keys"
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["young"]


def first_time(run: dict[str, object]):
    return Run.objects.get(pk=run["id"]).created_at


def test_a_set_is_replayed_like_a_run_and_the_same_key_on_the_runs_endpoint_is_another_key(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    sweep = sweep_profile(world.team)
    body = {"disk": world.disk.pk, "profile": sweep.pk}
    with django_capture_on_commit_callbacks() as first_sent:
        first = start(api, body, "sweep-1", "/api/v1/sets/")
    assert first.status_code == 201, first.content
    assert first_sent
    sets, runs = RunSet.objects.count(), Run.objects.count()

    with django_capture_on_commit_callbacks() as replay_sent:
        replay = start(api, body, "sweep-1", "/api/v1/sets/")

    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    assert replay.json()["id"] == first.json()["id"]
    assert [m["id"] for m in replay.json()["members"]] == [m["id"] for m in first.json()["members"]]
    assert (RunSet.objects.count(), Run.objects.count()) == (sets, runs) and replay_sent == []
    assert start(api, body, "sweep-1", "/api/v1/sets/").json()["id"] == first.json()["id"]
    # The runs endpoint keeps its own keys: the same key there is not this set's.
    one_run = start(api, {"disk": world.disk.pk, "profile": world.profile.pk}, "sweep-1")
    assert one_run.status_code == 201 and "Idempotent-Replayed" not in one_run


@pytest.mark.parametrize("path", ["/api/v1/runs/", "/api/v1/sets/"])
def test_the_schema_documents_the_key_the_replay_header_and_the_refusals(path):
    operation = schema.raw_schema["paths"][path]["post"]
    [header] = [p for p in operation["parameters"] if p["name"] == KEY]
    assert header["in"] == "header" and not header.get("required") and header["schema"]["maxLength"] == 255
    assert "422" in header["description"] and "Idempotent-Replayed" in header["description"]
    assert "Idempotent-Replayed" in operation["responses"]["201"]["headers"]
    assert {"400", "409", "422"} <= set(operation["responses"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's row locks (DATABASE_URL=postgres://)")
def test_two_requests_at_once_with_one_key_start_one_run_and_one_launch(broker):
    """The disk's row is held locked, so the first request to claim the key waits at its commit (the run's foreign
    key is checked there) while the second waits on the key's unique index; both are let go together."""
    world, secret = make_world("racing")
    launches = LaunchCount(broker, queue_for(world.host.site))
    body = {"disk": world.disk.pk, "profile": world.profile.pk}
    answers: list[object] = []

    def request() -> None:
        try:
            answers.append(start(client_for(secret), body, "one-check"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=request) for _ in range(2)]
    with transaction.atomic():
        Disk.objects.select_for_update().get(pk=world.disk.pk)
        for thread in threads:
            thread.start()
        wait_for_lock_waiters(2)
    for thread in threads:
        thread.join()

    assert sorted(a.status_code for a in answers) == [201, 201], [a.content for a in answers]
    assert answers[0].json()["id"] == answers[1].json()["id"]
    assert sorted(a.get("Idempotent-Replayed", "") for a in answers) == ["", "true"]
    assert Run.objects.filter(disk=world.disk).exclude(pk=world.run.pk).count() == 1
    assert launches.new() == [answers[0].json()["id"]]


def wait_for_lock_waiters(count: int) -> None:
    """Until `count` other sessions of this database wait on a lock; a test that never gets there fails saying so.
    (Inside a transaction PostgreSQL keeps the first look at pg_stat_activity unless its snapshot is cleared.)"""
    for _ in range(600):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")  # fmt: skip
            if cursor.fetchone()[0] >= count:
                return
        time.sleep(0.05)
    pytest.fail(f"never saw {count} requests waiting on a lock")


class LaunchCount:
    """The launch messages in the broker's queue for a site, counted from now: the run ids of new ones."""

    def __init__(self, url: str, queue: str) -> None:
        self.client = redis.Redis.from_url(url.replace("redis+socket://", "unix://"))
        self.queue = queue
        self.before = len(self._launches())

    def _launches(self) -> list[object]:
        # A launch waits in the queue's list of its priority (jobs/messages.py; kombu names it queue + sep + step).
        key = f"{self.queue}\x06\x16{jobs_messages.priority_of(jobs_messages.LAUNCH_RUN)}"
        messages = [json.loads(raw) for raw in self.client.lrange(key, 0, -1)]
        return [m["headers"]["argsrepr"] for m in messages if m["headers"]["task"] == "jobs.launch_run"]

    def new(self) -> list[int]:
        launches = self._launches()  # kombu pushes on the left: the newest first
        return [json.loads(args)[0] for args in launches[: len(launches) - self.before]]
