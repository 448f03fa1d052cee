"""Schemathesis against the API's own OpenAPI schema: generated requests on every operation, answered in
process by the Django app, as a member of a team with a few objects. Every default check runs: no 5xx, every
status, content type, header and body as the schema documents them, requests that break the schema refused
(ST201) and requests it allows accepted (ST202), except where the schema cannot say what is allowed (see
NAMES_OTHER_OBJECTS). Examples are few and derandomized so the suite stays quick and repeatable.

Two things a schema does not list get their own tests over every path it does: OPTIONS (DRF answers it on every
endpoint, asked for in JSON or CSV), and a JSON body nested past what the API reads (jobs/nesting.py)."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from jobs.alerts import evaluate
from jobs.api.base import MAX_ID
from jobs.api.models import ApiToken
from jobs.models import (
    Alert,
    AlertChannel,
    AlertRule,
    Annotation,
    ChangePoint,
    Delivery,
    Disk,
    Host,
    Membership,
    Profile,
    Run,
    RunSet,
    Schedule,
    Team,
)  # fmt: skip
from jobs.sets import requesting
from tests.factories import DiskFactory, HostFactory, RunFactory
from tests.openapi import schema
from tests.sets.sweeps import sweep_profile
from tests.world import CANARY_PASSWORD, make_world

# Schemathesis calls the app in process, which must not close the test's connection.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_the_test_connection")]


# positive_data_acceptance (ST202) wants every request the schema allows accepted. It is not checked where what is
# allowed depends on what exists, which a schema cannot say; every other check still runs on these operations, and
# tests/api/test_api.py checks the refusals themselves.
#
# These bodies name other objects by id (a credential, host, disk, profile, a schedule's targets and profiles):
# only ids of the caller's team are accepted, and the schema can say "a whole number", never which ones exist. A
# random id is refused with a 400 naming the field ("Invalid pk ..."). The import's text must also be a tool's
# output, which no schema describes.
NAMES_OTHER_OBJECTS = {
    f"{method} /api/v1/{path}"
    for path, methods in {
        "hosts/": ["POST"], "hosts/{id}/": ["PUT", "PATCH"], "disks/": ["POST"], "disks/{id}/": ["PUT", "PATCH"],
        "schedules/": ["POST"], "schedules/{id}/": ["PUT", "PATCH"], "runs/": ["POST"], "import/": ["POST"],
        "import/sweep/": ["POST"], "import/group/": ["POST"],
        "annotations/": ["POST"], "annotations/{id}/": ["PUT", "PATCH"], "share-links/": ["POST"], "sets/": ["POST"],
    }.items()
    for method in methods
}  # fmt: skip
# The others, each with the rule the schema cannot state.
POSITIVE_DATA_NOT_CHECKED = dict.fromkeys(NAMES_OTHER_OBJECTS, "names other objects by id") | {
    "POST /api/v1/tokens/": "expires_at must still be in the future when the request arrives",
    "POST /api/v1/profiles/": "a name must be new in the team and among the presets; the generator repeats names",
    "PUT /api/v1/profiles/{id}/": "a name must be new, and an ndisk64 profile takes no extra_options",
    "PATCH /api/v1/profiles/{id}/": "a name must be new, and an ndisk64 profile takes no extra_options",
    "GET /api/v1/disks/{id}/series/": "from and to go only with range=custom, and 2024-02-30 fits the pattern",
    "GET /api/v1/compare/stats/": "a_disk with b_disk or disk with split, naming disks of the caller's team",
    "GET /api/v1/sets/compare/": "a_disk with b_disk or disk with split, naming disks of the caller's team",
    "GET /api/v1/distributions/": "runs or disks, one of them, naming runs or disks of the caller's team",
    "GET /api/v1/disks/{id}/compliance/": "period goes without since/until, until after since, 2024-02-30 fits",
    "GET /api/v1/disks/{id}/stability/": "period goes without since/until, until after since, 2024-02-30 fits",
    "POST /api/v1/alerts/{id}/expected/": "only an unresolved regression; the fuzzed team's alert is a failed run",
    "POST /api/v1/alerts/{id}/acknowledge/": "only an unresolved alert; an earlier case may have resolved none, but "
    "the id is drawn at random",
}


def snapshot(team: Team) -> list[object]:
    """Everything of a team the fuzzer could change if isolation failed."""
    return [
        list(Host.objects.filter(team=team).values_list("pk", "name", "address", "credential_id", "enabled")),
        list(Disk.objects.filter(team=team).values_list("pk", "label", "target_path", "spec_iops")),
        list(Profile.objects.filter(team=team).values_list("pk", "name", "rw")),
        list(Schedule.objects.filter(team=team).values_list("pk", "name", "enabled", "cron")),
        list(Run.objects.filter(team=team).values_list("pk", "state", "cancel_requested")),
        list(RunSet.objects.filter(team=team).values_list("pk", "state", "cancel_requested")),
        list(Membership.objects.filter(team=team).values_list("pk", "user_id", "role")),
        list(ApiToken.objects.filter(team=team).values_list("pk", "revoked_at")),
        list(Annotation.objects.filter(team=team).values_list("pk", "text", "at")),
        list(ChangePoint.objects.filter(team=team).values_list("pk", "expected")),
        list(Alert.objects.filter(team=team).values_list("pk", "state", "acknowledged_at")),
        list(AlertRule.objects.filter(team=team).values_list("kind", "enabled", "consecutive_runs", "intervals")),
        list(AlertChannel.objects.filter(team=team).values_list("pk", "name", "target", "enabled")),
        list(Delivery.objects.filter(channel__team=team).values_list("pk", "state")),
    ]


@pytest.fixture
def fuzzed() -> tuple[str, Team, list[object]]:
    """A member's token for a team with a few objects, a bystander team beside it, and the bystander's snapshot:
    taken once, as no request may change it, every example's is compared with it (a snapshot is 13 queries, and
    one before each example as well cost a sixth of the fuzzing)."""
    world, _ = make_world("fuzzed")
    bystander, _ = make_world("bystander", password="bystander-canary-password")
    for team_world in (world, bystander):
        Annotation.objects.create(team=team_world.team, at=team_world.run.finished_at, text="kernel upgrade")
        ChangePoint.objects.create(
            team=team_world.team, disk=team_world.disk, metric="iops", run=team_world.run,
            at=team_world.run.finished_at, at_ms=1, before=4000, after=2800, change_percent=-30, p_value=0.001,
            runs_before=18, runs_after=12, direction="worse",
        )  # fmt: skip
        failed = RunFactory(
            disk=team_world.disk, profile=team_world.profile, state=Run.State.FAILED,
            finished_at=team_world.run.finished_at, explanation="fio exited with status 1",
        )  # fmt: skip
        evaluate.run_finished(failed.pk)
        # A channel no receiver answers (port 9 on this machine): a fuzzed test delivery only ever queues.
        AlertChannel.objects.create(team=team_world.team, name="ops", kind="webhook", target="http://127.0.0.1:9/")
        # A sweep, its first point queued and the others pending: a set to read, cancel and export.
        requesting.request_sweep(team_world.disk, sweep_profile(team_world.team))
        # A group on two more disks, its members queued: a group's detail and cancel as the schema says them.
        pair = [DiskFactory(host=HostFactory(team=team_world.team, name=f"g{n}"), label=f"g{n}") for n in (1, 2)]
        requesting.request_group(pair, team_world.profile, {"cap_iops": 9000})
        # A group-size sweep on two more, its first size queued: its plan and its sizes so far as the schema says.
        duo = [DiskFactory(host=HostFactory(team=team_world.team, name=f"s{n}"), label=f"s{n}") for n in (1, 2)]
        requesting.request_group_sizes(duo, team_world.profile)
    # An account without an email address: the members list shows "" for it, which the schema must allow.
    Membership.objects.create(user=User.objects.create_user("no-email"), team=world.team, role=Membership.Role.VIEWER)
    # A member, not an owner: owner-only writes answer 403, which the schema allows like any other 4xx.
    Membership.objects.filter(team=world.team).update(role=Membership.Role.MEMBER)
    return ApiToken.issue(world.owner, world.team, "fuzz")[1], bystander.team, snapshot(bystander.team)


# Shared between the sessions of ./bw test (tests/sharing.py), as the slow tests are: some 100 operations of 15
# requests each cost two minutes of CPU a session, an eighth of the suite's. Each operation is fuzzed on SQLite in
# one run and on PostgreSQL in another, whichever session claims it first.
@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_without_a_server_error_and_as_its_schema_says(case, fuzzed):
    secret, bystander, before = fuzzed
    excluded = [positive_data_acceptance] if case.operation.label in POSITIVE_DATA_NOT_CHECKED else []
    response = case.call_and_validate(headers={"Authorization": f"Bearer {secret}"}, excluded_checks=excluded)
    for canary in (CANARY_PASSWORD, "bystander"):
        assert canary not in response.text
    assert snapshot(bystander) == before


PATHS: dict[str, dict[str, object]] = schema.raw_schema["paths"]
# A format= DRF negotiates (json, csv on the exports), one no endpoint renders, and an Accept asking for CSV.
ASKED_FOR = [
    ("", {}),
    ("?format=json", {}),
    ("?format=csv", {}),
    ("?format=xml", {}),
    ("", {"HTTP_ACCEPT": "text/csv"}),
]


def _path(template: str, ids: dict[str, int]) -> str:
    """The path with each {id} the world's own object where the resource is one of it, else an id no team has."""
    resource = template.removeprefix("/api/v1/").split("/", 1)[0]
    return re.sub(r"\{[^}]+\}", str(ids.get(resource, MAX_ID)), template)


@pytest.mark.parametrize("template", sorted(PATHS))
def test_options_on_every_path_describes_it_in_json_however_it_is_asked_for(template):
    world, _ = make_world("options")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(world.owner, world.team, 'options')[1]}",
                 raise_request_exception=False)  # fmt: skip
    path = _path(template, world.ids())
    for query, headers in ASKED_FOR:
        response = api.options(path + query, **headers)
        assert response.status_code < 500, (path + query, headers, response.content[:300])
        assert response["Content-Type"] == "application/json", (path + query, headers)
        assert "Allow" in response or response.status_code == 404


BODY_OPERATIONS = sorted(
    (template, method.upper())
    for template, methods in PATHS.items()
    for method, operation in methods.items()
    if isinstance(operation, dict) and "requestBody" in operation
)
TOO_DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(("template", "method"), BODY_OPERATIONS, ids=[f"{m} {t}" for t, m in BODY_OPERATIONS])
def test_every_operation_that_takes_a_body_refuses_json_nested_too_deeply_with_a_json_400(template, method):
    world, _ = make_world("deep")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(world.owner, world.team, 'deep')[1]}",
                 raise_request_exception=False)  # fmt: skip
    ids = world.ids()
    path = _path(template, ids)
    before = snapshot(world.team)
    body = '{"name": ' + TOO_DEEP + "}"
    response = api.generic(method, path, body, content_type="application/json")
    assert response["Content-Type"] == "application/json", response.content[:300]
    reached = "{" not in template or template.removeprefix("/api/v1/").split("/", 1)[0] in ids
    if reached:  # the caller's own object, or a collection: the body is read, and refused
        assert response.status_code == 400, response.content[:300]
        assert "nested more than 32 levels deep" in json.loads(response.content)["detail"]
    else:  # an id no team has: 404 before any body is read
        assert response.status_code == 404
    assert snapshot(world.team) == before
