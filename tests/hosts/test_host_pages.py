from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import presets
from jobs.models import Disk, Host, Membership, Profile, Run, Team
from tests.factories import RunFactory


@pytest.fixture
def rival_client(db) -> Client:
    rival = User.objects.create_user("rival", password="x-long-password-2")
    Membership.objects.create(user=rival, team=Team.objects.create(name="rivals"), role="owner")
    client = Client()
    client.force_login(rival)
    return client


def test_scanning_shows_the_fingerprint_and_approving_pins_exactly_that_key(owner_client, host, sshd):
    host.port = sshd.port
    host.save()
    page = owner_client.post(f"/hosts/{host.pk}/scan-key", follow=True).content.decode()
    assert sshd.host_key.fingerprint in page
    assert "Approve this key" in page
    host.refresh_from_db()
    assert not host.has_pinned_key

    owner_client.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": sshd.host_key.fingerprint})
    host.refresh_from_db()
    assert (host.host_key_type, host.host_key_b64) == (sshd.host_key.key_type, sshd.host_key.key_b64)
    assert host.host_key_fingerprint == sshd.host_key.fingerprint
    assert host.host_key_approved_by.username == "olga"


def test_approving_a_fingerprint_other_than_the_scanned_one_pins_nothing(owner_client, host, sshd):
    host.port = sshd.port
    host.save()
    owner_client.post(f"/hosts/{host.pk}/scan-key")
    page = owner_client.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": "SHA256:forged"}, follow=True)
    assert "scan again and compare" in page.content.decode()
    host.refresh_from_db()
    assert not host.has_pinned_key


def test_a_scan_that_cannot_connect_says_why(owner_client, host):
    host.port = 1
    host.save()
    page = owner_client.post(f"/hosts/{host.pk}/scan-key", follow=True).content.decode()
    assert "Could not read the host key of vm1" in page


def test_a_viewer_cannot_run_or_approve(host, disk):
    viewer = User.objects.create_user("vera", password="x-long-password-3")
    Membership.objects.create(user=viewer, team=host.team, role="viewer")
    client = Client()
    client.force_login(viewer)
    profile = Run._meta.get_field("profile").related_model.objects.filter(builtin=True).first()
    assert client.post(f"/disks/{disk.pk}/", {"profile": profile.pk}).status_code == 403
    assert client.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": "x"}).status_code == 403
    assert not Run.objects.exists()


def test_another_team_gets_404_for_every_page_of_this_teams_objects(rival_client, host, disk):
    run = RunFactory(disk=disk, succeeded=True, raw_output="secret output")
    urls = [f"/hosts/{host.pk}/", f"/disks/{disk.pk}/", f"/runs/{run.pk}/", f"/runs/{run.pk}/progress.json",
            f"/runs/{run.pk}/raw"]  # fmt: skip
    for url in urls:
        assert rival_client.get(url).status_code == 404, url
    for url in [f"/hosts/{host.pk}/scan-key", f"/hosts/{host.pk}/approve-key", f"/runs/{run.pk}/cancel",
                f"/disks/{disk.pk}/"]:  # fmt: skip
        assert rival_client.post(url, {"fingerprint": "x", "profile": 1}).status_code == 404, url
    assert Host.objects.get(pk=host.pk).host_key_fingerprint == ""


def test_a_run_of_a_busy_disk_waits_and_the_run_page_says_why(owner_client, disk):
    busy = RunFactory(disk=disk, running=True)
    # The quick check: a preset that can run on this directory disk (the raw-device recipes are refused).
    profile = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    response = owner_client.post(f"/disks/{disk.pk}/", {"profile": profile.pk})
    page = owner_client.get(response["Location"]).content.decode()
    assert f"waiting: disk busy with run {busy.pk}" in page


def test_a_pending_run_is_cancelled_at_once(owner_client, disk):
    RunFactory(disk=disk, running=True)
    waiting = RunFactory(disk=disk, state=Run.State.PENDING)
    owner_client.post(f"/runs/{waiting.pk}/cancel")
    waiting.refresh_from_db()
    assert waiting.state == Run.State.CANCELLED
    assert Disk.objects.get(pk=disk.pk).runs.filter(state=Run.State.RUNNING).count() == 1
