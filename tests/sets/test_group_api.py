"""Synchronised groups through the API (jobs/sets/api.py): started with `disks` (trigger 'api', the backend's caps in
the plan), read with their members and, once ended, their result as the OpenAPI schema says, listed by kind,
cancelled whole; every refusal a 400 naming `disks`, `profile` or the cap, and the member, with nothing written.
Members end through the state machine (tests/sets/sweeps.py), without a worker or fio."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobs.models import Disk, Run, RunSet
from jobs.sets import advancing
from tests.factories import DiskFactory, HostFactory, ProfileFactory
from tests.openapi import json_schema
from tests.sets.group_requests import assert_refused_whole, changed, refused_disk
from tests.sets.sweeps import members, succeed, sweep_profile
from tests.world import client_for, make_world, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def ours():
    """A team's world and a client holding its owner's token."""
    world, secret = make_world("ours")
    return world, client_for(secret)


def three_disks(world) -> list[Disk]:
    """The world's disk and two more, each on a host of its own."""
    others = [DiskFactory(host=HostFactory(team=world.team, name=f"db-{n}"), label=f"d{n}") for n in (2, 3)]
    return [world.disk, *others]


def test_a_group_started_through_the_api_answers_its_plan_members_and_start_instant(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    disks = three_disks(world)
    body = {"profile": world.profile.pk, "disks": [d.pk for d in disks], "cap_iops": 50000, "cap_mb_s": 800.5}

    with django_capture_on_commit_callbacks() as sent:
        response = post(api, "/api/v1/sets/", body)

    assert response.status_code == 201, response.content
    found = response.json()
    run_set = RunSet.objects.get(pk=found["id"])
    assert found["kind"] == "group" and found["trigger"] == "api" and run_set.trigger == "api"
    assert run_set.plan == {"disks": [d.pk for d in disks], "cap_iops": 50000, "cap_mb_s": 800.5}
    assert found["plan"] == {"disks": [d.pk for d in disks], "cap_iops": 50000.0, "cap_mb_s": 800.5, "count": 3,
                             "text": "3 members, one a disk, started at one instant"}  # fmt: skip
    assert found["points"] == 3 and found["state"] == "running" and found["result"] is None
    start = members(run_set)[0].not_before
    assert found["explanation"] == f"running: 3 members start at {start.strftime('%H:%M:%S')} UTC"
    listed = [(m["index"], m["disk"], m["disk_label"], m["host"], m["host_name"], m["state"]) for m in found["members"]]
    assert listed == [(i, d.pk, d.label, d.host_id, d.host.name, "queued") for i, d in enumerate(disks)]
    assert found["members"][1]["url"] == f"http://testserver/api/v1/runs/{members(run_set)[1].pk}/"
    assert all(m.trigger == "api" for m in members(run_set)) and len(sent) == 1


def test_the_list_filters_groups_by_kind(ours, django_capture_on_commit_callbacks):
    world, api = ours
    with django_capture_on_commit_callbacks():
        sweep = post(api, "/api/v1/sets/", {"disk": world.disk.pk, "profile": sweep_profile(world.team).pk}).json()
        others = three_disks(world)[1:]
        group = post(api, "/api/v1/sets/", {"profile": world.profile.pk, "disks": [d.pk for d in others]}).json()

    assert [s["id"] for s in api.get("/api/v1/sets/?kind=group").json()["results"]] == [group["id"]]
    assert [s["id"] for s in api.get("/api/v1/sets/?kind=sweep").json()["results"]] == [sweep["id"]]
    assert api.get("/api/v1/sets/?kind=group").json()["results"][0]["points"] == 2


def test_an_ended_groups_detail_holds_its_result_as_the_schema_says(ours, django_capture_on_commit_callbacks):
    import jsonschema
    from drf_spectacular.generators import SchemaGenerator

    world, api = ours
    disks = three_disks(world)
    with django_capture_on_commit_callbacks():
        found = post(api, "/api/v1/sets/", {"profile": world.profile.pk, "disks": [d.pk for d in disks]}).json()
        run_set = RunSet.objects.get(pk=found["id"])
        Run.objects.filter(run_set=run_set).update(started_at=timezone.now())
        for member, iops in zip(members(run_set), (1000, 2000, 3000), strict=True):
            succeed(member, iops, 100)
        advancing.advance(run_set.pk)

    body = api.get(f"/api/v1/sets/{run_set.pk}/").json()
    assert body["state"] == "succeeded" and body["explanation"] == "finished: 3 of 3 members succeeded"
    result = body["result"]
    assert result["totals"]["whole_runs"]["iops"] == 6000
    assert {"start_spread", "windows", "totals", "per_second", "latency", "comparison"} <= set(result)
    assert [(m["name"], m["disk"], m["host"]) for m in result["members"]] == [
        (f"member {n}", d.label, d.host.name) for n, d in enumerate(disks, 1)
    ]
    schema = json_schema(SchemaGenerator().get_schema(request=None, public=True))
    jsonschema.validate(body, {"$ref": "#/components/schemas/SetDetail", "components": schema["components"]})


@pytest.mark.parametrize("busy", [False, True], ids=["claimed", "waiting"])
def test_one_cancel_through_the_api_ends_every_member(busy, ours, django_capture_on_commit_callbacks):
    world, api = ours
    disks = three_disks(world)
    with django_capture_on_commit_callbacks():
        if busy:
            post(api, "/api/v1/runs/", {"disk": disks[1].pk, "profile": world.profile.pk})
        found = post(api, "/api/v1/sets/", {"profile": world.profile.pk, "disks": [d.pk for d in disks]}).json()
        assert found["state"] == ("pending" if busy else "running")
        response = post(api, f"/api/v1/sets/{found['id']}/cancel/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "cancelled" and body["explanation"] == "cancelled: 0 of 3 members succeeded"
    assert [m["state"] for m in body["members"]] == ["cancelled"] * 3
    assert Run.objects.filter(run_set_id=found["id"]).exclude(state=Run.State.CANCELLED).count() == 0


def _refusals(world):
    """(what the body gets beside a profile and three good disks, the field, words the message holds)."""
    stranger = make_world("theirs")[0].disk
    return [
        ({"disks": lambda d: d[:1]}, "disks", "A group has 2 to 100 members, one a disk; 1 was given"),
        ({"disks": lambda d: [d[0], stranger, d[2]]}, "disks", f"member 2 (disk {stranger.pk}): no disk of your team"),
        ({"disks": lambda d: [d[0], d[1], d[0]]}, "disks", "is given more than once"),
        ({"profile": sweep_profile(world.team).pk}, "profile", "is a set profile"),
        ({"disks": lambda d: [*d, refused_disk(world)]}, "disks", "Member 4 (disk raw on host db-raw) is refused"),
        ({"disk": world.disk.pk}, "disks", "exactly one of them"),
        ({"disks": None}, "disk", "exactly one of them"),
        ({"cap_iops": 0}, "cap_iops", "as a number above 0"),
        ({"cap_mb_s": -5}, "cap_mb_s", "as a number above 0"),
        ({"disks": None, "disk": world.disk.pk, "cap_iops": 10}, "cap_iops", "Only a group takes a backend cap"),
    ]


def test_every_refusal_names_its_field_and_member_and_writes_nothing(ours):
    world, api = ours
    writer = ProfileFactory(team=world.team, name="writes", rw="randwrite", size_bytes=2**20)
    disks = three_disks(world)
    for change, field, words in _refusals(world):
        body = changed({"profile": writer.pk, "disks": [d.pk for d in disks]}, change, disks)
        assert_refused_whole(api, body, field, words)
