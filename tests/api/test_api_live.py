"""A run started through the API, end to end: a real Celery worker and Redis, a real sshd, real fio."""

from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.models import Disk, Membership, Run
from tests.builders import quick_profile, target_dir, team_with_host

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_token_holder_starts_a_run_polls_it_and_reads_its_result(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    user = User.objects.create_user("ci-bot-owner")
    Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom",
                               spec_iops=50000)  # fmt: skip
    profile = quick_profile(team)

    browser = Client()
    browser.force_login(user)
    made = browser.post("/api/v1/tokens/", json.dumps({"name": "ci"}), content_type="application/json")
    assert made.status_code == 201
    api = Client(HTTP_AUTHORIZATION=f"Bearer {made.json()['token']}")

    started = api.post("/api/v1/runs/", json.dumps({"disk": disk.pk, "profile": profile.pk}),
                       content_type="application/json")  # fmt: skip
    assert started.status_code == 201, started.content
    run_id = started.json()["id"]
    deadline = time.monotonic() + 90
    while True:
        body = api.get(f"/api/v1/runs/{run_id}/").json()
        if body["final"]:
            break
        assert time.monotonic() < deadline, f"run stayed {body['state']} ({body['explanation']})"
        time.sleep(0.5)

    assert body["state"] == Run.State.SUCCEEDED, body["explanation"]
    assert body["trigger"] == "api" and body["created_by"] == "ci-bot-owner"
    assert body["summary"]["tool"] == "fio" and body["summary"]["read"]["iops"] > 100
    assert body["limits_snapshot"]["iops"] == 50000
    samples = api.get(f"/api/v1/runs/{run_id}/samples/").json()
    assert samples["count"] >= 2 and samples["results"][0]["read_iops"] is not None
    listed = api.get(f"/api/v1/runs/?disk={disk.pk}&state=succeeded&trigger=api").json()
    assert [r["id"] for r in listed["results"]] == [run_id]
