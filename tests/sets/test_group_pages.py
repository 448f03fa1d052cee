"""A group's first draft of a page (its state, spread, totals and members) and its member's run page naming it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobs.models import Disk, Run
from jobs.sets import advancing, requesting
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.sweeps import members, succeed

pytestmark = pytest.mark.django_db


def test_a_group_page_shows_its_members_spread_and_totals_and_a_member_names_its_group(
    owner_client, disk, django_capture_on_commit_callbacks
):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group([disk, other], ProfileFactory(team=disk.team))
        Run.objects.filter(run_set=run_set).update(started_at=timezone.now())
        for member, iops in zip(members(run_set), (1000, 2000), strict=True):
            succeed(member, iops, 100)
        advancing.advance(run_set.pk)
    second = members(run_set)[1]

    run_page = owner_client.get(f"/runs/{second.pk}/").content.decode()
    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()

    assert f'<a href="/sets/{run_set.pk}/" id="run-set">member 2 of 2 of group {run_set.pk}</a>' in run_page
    assert f"Group {run_set.pk} <span" in page
    assert "finished: 2 of 2 members succeeded" in page
    assert "started within 0.00 s ± 0.00 s" in page and "offsets not measured" in page
    assert "each member&#x27;s whole run, summed" in page and "3k" in page
    assert f'<a href="/runs/{second.pk}/">member 2</a>' in page and "Knee" not in page


def test_another_teams_group_is_a_404(owner_client):
    first = DiskFactory()
    second = DiskFactory(host=first.host)
    run_set = requesting.create_group([first, second], ProfileFactory(team=first.team))
    assert owner_client.get(f"/sets/{run_set.pk}/").status_code == 404


def test_a_finished_group_is_not_offered_for_comparing_sweeps(owner_client, disk, django_capture_on_commit_callbacks):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group([disk, other], ProfileFactory(team=disk.team, name="together"))
        for member in members(run_set):
            succeed(member, 1000, 100)
        advancing.advance(run_set.pk)

    assert "together" not in owner_client.get("/sets/compare/").content.decode()
    page = owner_client.get(f"/sets/compare/?a_disk={disk.pk}&b_disk={other.pk}&profile=together")
    assert (
        page.status_code == 400 and "No finished sweep of &#x27;together&#x27; on either side" in page.content.decode()
    )
