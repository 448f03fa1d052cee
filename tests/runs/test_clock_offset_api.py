"""A run's clock offset in the runs API (jobs/runs/api.py clock_offset): a group member's host clock against the
worker's as measured at its launch, or why it was not (not launched yet, a probe that failed, never measured), and
null for a run outside a group; as the OpenAPI schema says it."""

from __future__ import annotations

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from jobs.models import Run
from jobs.sets import requesting
from tests.factories import DiskFactory, HostFactory
from tests.openapi import json_schema
from tests.sets.sweeps import members, sweep_profile
from tests.world import client_for, make_world

pytestmark = pytest.mark.django_db

MEASURED = {"offset_s": -0.0021, "uncertainty_s": 0.0004, "delay_s": 0.0008, "probes": 5}


@pytest.fixture
def ours():
    world, secret = make_world("ours")
    return world, client_for(secret)


def group_members(world, kind: str = "group") -> list[Run]:
    """The members of a group (or a group-size sweep) on the world's disk and one more, the first claimed."""
    disks = [world.disk, DiskFactory(host=HostFactory(team=world.team, name="db-2"), label="d2")]
    if kind == "group":
        return members(requesting.request_group(disks, world.profile))
    return members(requesting.request_group_sizes(disks, world.profile))


def detail(api, run: Run) -> dict:
    response = api.get(f"/api/v1/runs/{run.pk}/")
    assert response.status_code == 200, response.content
    body = response.json()
    schema = json_schema(SchemaGenerator().get_schema(request=None, public=True))
    jsonschema.validate(body, {"$ref": "#/components/schemas/RunDetail", "components": schema["components"]})
    return body


def test_a_measured_members_offset_is_given_with_its_uncertainty_round_trip_and_probes(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    with django_capture_on_commit_callbacks():
        first, second = group_members(world)
    Run.objects.filter(pk=first.pk).update(clock_offset=MEASURED)

    assert detail(api, first)["clock_offset"] == MEASURED | {"why": None}
    assert detail(api, second)["clock_offset"] == {
        "offset_s": None, "uncertainty_s": None, "delay_s": None, "probes": None,
        "why": "not measured yet: a member's host clock is probed when the member is launched",
    }  # fmt: skip


def test_a_member_whose_probe_failed_says_why_and_one_never_measured_says_so(ours, django_capture_on_commit_callbacks):
    world, api = ours
    with django_capture_on_commit_callbacks():
        first, second = group_members(world)
    failed = "offset not measured: date +%s.%N printed no nanoseconds"
    Run.objects.filter(pk=first.pk).update(clock_offset={"why": failed}, state=Run.State.SUCCEEDED)
    Run.objects.filter(pk=second.pk).update(state=Run.State.SUCCEEDED)

    assert detail(api, first)["clock_offset"]["why"] == failed
    assert detail(api, second)["clock_offset"] == {
        "offset_s": None, "uncertainty_s": None, "delay_s": None, "probes": None, "why": "offset not measured"
    }  # fmt: skip


def test_a_group_size_sweeps_member_has_an_offset_and_a_run_outside_a_group_has_none(
    ours, django_capture_on_commit_callbacks
):
    world, api = ours
    with django_capture_on_commit_callbacks():
        sized = group_members(world, kind="group_sizes")
        sweep = members(
            requesting.request_sweep(DiskFactory(host=world.disk.host, label="s"), sweep_profile(world.team))
        )
    Run.objects.filter(pk=sized[0].pk).update(clock_offset=MEASURED)

    assert detail(api, sized[0])["clock_offset"]["offset_s"] == -0.0021
    assert detail(api, world.run)["clock_offset"] is None
    assert detail(api, sweep[0])["clock_offset"] is None
