"""Schemathesis against the API's own OpenAPI schema: generated requests on every operation, answered in
process by the Django app, as a member of a team with a few objects. No 5xx, and every answer matches the
schema. Examples are few and derandomized so the suite stays quick and repeatable."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import response_schema_conformance

from jobs.api.models import ApiToken
from jobs.models import Disk, Host, Membership, Profile, Run, Schedule, Team
from tests.test_api import CANARY_PASSWORD, make_world

pytestmark = pytest.mark.django_db


# Loaded from the app itself, in process, when the module is collected (Django is set up by then).
# The coverage phase (hundreds of boundary cases per operation) is left to a manual `schemathesis run`; here
# hypothesis draws a bounded, derandomized set.
CONFIG = SchemathesisConfig.from_dict({"phases": {"coverage": {"enabled": False}}})
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", WSGIHandler(), config=CONFIG)


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    # As Django's test client does: a request must not close the test's database connection at its end,
    # or the objects of the test's transaction would be gone for the next request.
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


def snapshot(team: Team) -> list[object]:
    """Everything of a team the fuzzer could change if isolation failed."""
    return [
        list(Host.objects.filter(team=team).values_list("pk", "name", "address", "credential_id", "enabled")),
        list(Disk.objects.filter(team=team).values_list("pk", "label", "target_path", "spec_iops")),
        list(Profile.objects.filter(team=team).values_list("pk", "name", "rw")),
        list(Schedule.objects.filter(team=team).values_list("pk", "name", "enabled", "cron")),
        list(Run.objects.filter(team=team).values_list("pk", "state", "cancel_requested")),
        list(Membership.objects.filter(team=team).values_list("pk", "user_id", "role")),
        list(ApiToken.objects.filter(team=team).values_list("pk", "revoked_at")),
    ]


@pytest.fixture
def fuzzed() -> tuple[str, Team]:
    """A member's token for a team with a few objects, and a bystander team beside it."""
    world, _ = make_world("fuzzed")
    bystander, _ = make_world("bystander", password="bystander-canary-password")
    # A member, not an owner: owner-only writes answer 403, which the schema allows like any other 4xx.
    Membership.objects.filter(team=world.team).update(role=Membership.Role.MEMBER)
    return ApiToken.issue(world.owner, world.team, "fuzz")[1], bystander.team


@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_without_a_server_error_and_as_its_schema_says(case, fuzzed):
    secret, bystander = fuzzed
    before = snapshot(bystander)
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {secret}"},
        checks=[not_a_server_error, response_schema_conformance],
    )
    for canary in (CANARY_PASSWORD, "bystander"):
        assert canary not in response.text
    assert snapshot(bystander) == before
