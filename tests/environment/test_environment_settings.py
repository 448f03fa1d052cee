"""The switches of issue 16's environment part, in the forms and the API: a host's tunable and cloud_metadata
(both off unless turned on), a profile's pin_queue_cpus, and the pinned profile's job file."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import environment
from jobs.hosts.forms import HostForm
from jobs.models import Host, Profile, Run
from jobs.profiles.forms import ProfileForm
from jobs.tools import fio
from jobs.tools.options import ToolOptionError
from tests.openapi import schema
from tests.world import client_for, make_world, post

# Schemathesis calls the app in process, which must not close the test's connection.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_the_test_connection")]


def test_a_host_is_neither_tunable_nor_asks_a_metadata_service_unless_turned_on() -> None:
    world, secret = make_world("env")

    api = client_for(secret)
    body = {"name": "new", "address": "10.0.0.9", "username": "bench"}
    created = post(api, "/api/v1/hosts/", body).json()
    assert created["tunable"] is False and created["cloud_metadata"] is False
    changed = post(api, f"/api/v1/hosts/{created['id']}/", {"tunable": True, "cloud_metadata": True}, "patch").json()
    assert changed["tunable"] is True and changed["cloud_metadata"] is True
    host = Host.objects.get(pk=created["id"])
    assert host.tunable and host.cloud_metadata

    form = HostForm(instance=world.host, team=world.team)
    assert form["tunable"].value() is False and form["cloud_metadata"].value() is False
    html = str(form["tunable"].help_text) + str(form["cloud_metadata"].help_text)
    assert "rq_affinity" in html and "Off: nothing contacts a metadata service" in html


def test_a_profile_is_pinned_through_the_form_and_the_api() -> None:
    world, secret = make_world("pin")

    answer = post(client_for(secret), f"/api/v1/profiles/{world.profile.pk}/", {"pin_queue_cpus": True}, "patch")
    assert answer.json()["pin_queue_cpus"] is True
    world.profile.refresh_from_db()
    assert world.profile.parameters()["pin_queue_cpus"] is True
    assert "pin_queue_cpus" in ProfileForm(instance=world.profile, team=world.team).fields


def params(**changes) -> dict:
    profile = Profile(tool="fio", rw="randread", ioengine="libaio", jobs=2, pin_queue_cpus=True)
    return profile.parameters() | changes


def test_the_pinned_job_file_has_the_queue_cpus_and_the_split_policy() -> None:
    job = fio.build_fio_job(params(queue_cpus="0-3,8"), "/dev/nvme0n1", "block", "/r/" + "0" * 8, readonly=True)
    assert "cpus_allowed=0-3,8\ncpus_allowed_policy=split\n" in job.jobfile
    # Checked against a target before any launch: no CPU list yet, and no lines for it.
    unknown = fio.build_fio_job(params(), "/dev/nvme0n1", "block", "/r/" + "0" * 8, readonly=True)
    assert "cpus_allowed" not in unknown.jobfile


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"queue_cpus": "0-3; reboot"}, "queue_cpus"), ({"extra_options": {"cpus_allowed": "0"}}, "extra_options")],
)
def test_a_pinned_job_file_refuses_a_bad_cpu_list_and_a_second_cpus_allowed(changes: dict, field: str) -> None:
    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(params(**changes), "/dev/nvme0n1", "block", "/r/" + "0" * 8, readonly=True)
    assert refused.value.field == field


def test_a_recorded_environment_in_the_api_answers_as_its_schema_says() -> None:
    world, secret = make_world("schema")
    report = (Path(__file__).parent.parent / "fixtures" / "environment" / "nvme_odd.txt").read_text()
    recorded = environment.parse_report(report)
    recorded["device"]["rq_affinity_set"] = 2
    Run.objects.filter(pk=world.run.pk).update(environment=recorded)
    case = schema["/api/v1/runs/{id}/"]["GET"].Case(path_parameters={"id": world.run.pk})
    response = case.call_and_validate(headers={"Authorization": f"Bearer {secret}"})
    assert response.json()["environment"] == recorded
