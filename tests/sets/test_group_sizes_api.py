"""Group-size sweeps through the API (jobs/sets/api.py): started with `"kind": "group_sizes"`, `disks` and optional
`sizes` (trigger 'api'), read with their plan, members and result (each size's numbers and where adding members
stopped adding IOPS) as the OpenAPI schema says, listed by kind, cancelled whole; every refusal a 400 naming `sizes`,
`disks`, `profile`, `kind` or the cap, with nothing written. Members end through the state machine, without a worker
or fio."""

from __future__ import annotations

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from jobs.models import Disk, RunSet
from jobs.sets import advancing
from tests.factories import DiskFactory, HostFactory, ProfileFactory
from tests.openapi import json_schema
from tests.sets.group_requests import assert_refused_whole, changed, refused_disk
from tests.sets.sweeps import measured, members, sweep_profile
from tests.world import client_for, make_world, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def ours():
    """A team's world and a client holding its owner's token."""
    world, secret = make_world("ours")
    return world, client_for(secret)


def disks_of(world, count: int = 3) -> list[Disk]:
    """The world's disk and count - 1 more, each on a host of its own."""
    others = [
        DiskFactory(host=HostFactory(team=world.team, name=f"db-{n}"), label=f"d{n}") for n in range(2, count + 1)
    ]
    return [world.disk, *others]


def sweep_body(world, disks: list[Disk], **more) -> dict:
    return {"kind": "group_sizes", "profile": world.profile.pk, "disks": [d.pk for d in disks], **more}


def matches_the_schema(body: dict) -> None:
    schema = json_schema(SchemaGenerator().get_schema(request=None, public=True))
    jsonschema.validate(body, {"$ref": "#/components/schemas/SetDetail", "components": schema["components"]})


def test_a_sweep_started_through_the_api_answers_its_plan_members_and_sizes_so_far(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    disks = disks_of(world)
    with django_capture_on_commit_callbacks() as sent:
        response = post(api, "/api/v1/sets/", sweep_body(world, disks, sizes=[1, 3]))

    assert response.status_code == 201, response.content
    found = response.json()
    run_set = RunSet.objects.get(pk=found["id"])
    assert found["kind"] == "group_sizes" and found["trigger"] == "api" and run_set.plan["sizes"] == [1, 3]
    assert found["plan"] == {
        "disks": [d.pk for d in disks], "sizes": [1, 3], "members": 4,
        "text": "2 group sizes (1, 3 members) on 3 disks: 4 member runs, each size started at one instant once the "
        "smaller ones have ended",
    }  # fmt: skip
    start = members(run_set)[0].not_before.strftime("%H:%M:%S")
    assert found["points"] == 4 and found["explanation"] == f"running size 1 of 2: 1 member starts at {start} UTC"
    assert [(m["index"], m["disk"], m["state"]) for m in found["members"]] == [
        (0, disks[0].pk, "queued"), (1, disks[0].pk, "pending"), (2, disks[1].pk, "pending"),
        (3, disks[2].pk, "pending"),
    ]  # fmt: skip
    sizes = found["result"]["sizes"]
    assert [(s["members"], s["state"], s["total_iops"], s["why"]) for s in sizes] == [
        (1, "running", None, "running: its numbers come when its members have ended"),
        (3, "waiting", None, "waiting: its numbers come when its members have ended"),
    ]
    assert found["result"]["saturation"]["members"] is None and found["result"]["saturation"]["left_out"] == [1, 3]
    assert all(m.trigger == "api" for m in members(run_set)) and len(sent) == 1
    matches_the_schema(found)


def test_without_sizes_a_sweep_runs_1_2_4_and_ends_at_the_number_of_disks(ours, django_capture_on_commit_callbacks):
    world, api = ours
    with django_capture_on_commit_callbacks():
        found = post(api, "/api/v1/sets/", sweep_body(world, disks_of(world, 5))).json()

    assert found["plan"]["sizes"] == [1, 2, 4, 5] and found["points"] == 12 and len(found["members"]) == 12


def test_an_ended_sweeps_detail_holds_its_sizes_and_saturation_as_the_schema_says(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    with django_capture_on_commit_callbacks():
        found = post(api, "/api/v1/sets/", sweep_body(world, disks_of(world))).json()
        run_set = RunSet.objects.get(pk=found["id"])
        for member, iops in zip(members(run_set), (1000, 1000, 1000, 700, 700, 650), strict=True):
            measured(member, iops)
        assert advancing.advance(run_set.pk) == RunSet.State.SUCCEEDED

    body = api.get(f"/api/v1/sets/{run_set.pk}/").json()

    assert body["state"] == "succeeded" and body["explanation"] == "finished: 3 of 3 sizes succeeded"
    assert [(s["members"], s["state"], s["total_iops"], s["member_iops"]) for s in body["result"]["sizes"]] == [
        (1, "succeeded", 1000, [1000]), (2, "succeeded", 2000, [1000, 1000]), (3, "succeeded", 2050, [700, 700, 650])
    ]  # fmt: skip
    saturation = body["result"]["saturation"]
    assert saturation["members"] == 2 and saturation["text"].startswith("from 2 members (2k IOPS, 1k IOPS a member")
    run_set.refresh_from_db()
    assert body["result"] == run_set.result
    matches_the_schema(body)


def test_the_list_filters_group_size_sweeps_by_kind(ours, django_capture_on_commit_callbacks):
    world, api = ours
    disks = disks_of(world, 5)
    with django_capture_on_commit_callbacks():
        group = post(api, "/api/v1/sets/", {"profile": world.profile.pk, "disks": [d.pk for d in disks[:2]]}).json()
        sweep = post(api, "/api/v1/sets/", sweep_body(world, disks[2:])).json()

    listed = api.get("/api/v1/sets/?kind=group_sizes").json()["results"]
    assert [(s["id"], s["kind"], s["points"]) for s in listed] == [(sweep["id"], "group_sizes", 6)]
    assert [s["id"] for s in api.get("/api/v1/sets/?kind=group").json()["results"]] == [group["id"]]


def test_one_cancel_through_the_api_ends_every_member_of_every_size(ours, django_capture_on_commit_callbacks):
    world, api = ours
    with django_capture_on_commit_callbacks():
        found = post(api, "/api/v1/sets/", sweep_body(world, disks_of(world))).json()
        response = post(api, f"/api/v1/sets/{found['id']}/cancel/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "cancelled" and body["explanation"] == "cancelled: 0 of 3 sizes succeeded"
    assert [m["state"] for m in body["members"]] == ["cancelled"] * 6
    assert [s["state"] for s in body["result"]["sizes"]] == ["cancelled"] * 3


def _refusals(world):
    """(what the body gets beside the kind, a profile and three good disks, the field, words the message holds)."""
    stranger = make_world("theirs")[0].disk
    return [
        ({"sizes": [1, 2]}, "sizes", "The last group size is the number of disks given (3), not 2"),
        ({"sizes": [2, 1, 3]}, "sizes", "The group sizes must grow from one to the next"),
        ({"sizes": [3]}, "sizes", "at least two group sizes; 1 was given"),
        ({"sizes": [0, 3]}, "sizes", "greater than or equal to 1"),
        ({"sizes": "1,2,3"}, "sizes", "Expected a list of items"),
        ({"disks": lambda d: d[:1]}, "disks", "A group has 2 to 100 members, one a disk; 1 was given"),
        ({"disks": lambda d: [d[0], stranger, d[2]]}, "disks", f"member 2 (disk {stranger.pk}): no disk of your team"),
        ({"disks": lambda d: [d[0], d[1], d[0]]}, "disks", "is given more than once"),
        ({"disks": lambda d: [*d, refused_disk(world)]}, "disks", "Member 4 (disk raw on host db-raw) is refused"),
        ({"profile": sweep_profile(world.team).pk}, "profile", "is a set profile"),
        ({"disks": None, "disk": world.disk.pk}, "disks", "A group-size sweep is started with disks, not disk"),
        ({"disks": None}, "disks", "exactly one of them"),
        ({"cap_iops": 50000}, "cap_iops", "A group-size sweep takes no backend cap"),
        ({"kind": "group", "sizes": [1, 3]}, "sizes", "Only a group-size sweep takes sizes"),
        ({"kind": "sweep"}, "disk", "A sweep is started with disk, not disks"),
        ({"kind": "bogus"}, "kind", "is not a valid choice"),
    ]


def test_every_refusal_names_its_field_and_writes_nothing(ours):
    world, api = ours
    writer = ProfileFactory(team=world.team, name="writes", rw="randwrite", size_bytes=2**20)
    disks = disks_of(world)
    for change, field, words in _refusals(world):
        assert_refused_whole(api, changed(sweep_body(world, disks, profile=writer.pk), change, disks), field, words)


def test_a_kind_that_matches_what_the_request_makes_is_taken(ours, django_capture_on_commit_callbacks):
    world, api = ours
    disks = disks_of(world)
    with django_capture_on_commit_callbacks():
        group = post(
            api, "/api/v1/sets/", {"kind": "group", "profile": world.profile.pk, "disks": [d.pk for d in disks]}
        )
        sweep = post(
            api, "/api/v1/sets/", {"kind": "sweep", "profile": sweep_profile(world.team).pk, "disk": disks[0].pk}
        )
        wrong = post(api, "/api/v1/sets/", {"kind": "sla", "profile": sweep_profile(world.team, name="s2").pk,
                                            "disk": disks[1].pk})  # fmt: skip

    assert (group.status_code, group.json()["kind"]) == (201, "group")
    assert (sweep.status_code, sweep.json()["kind"]) == (201, "sweep")
    assert wrong.status_code == 400 and list(wrong.json()) == ["kind"]
    assert "starts a sweep (sweep), not sla" in wrong.json()["kind"][0]
