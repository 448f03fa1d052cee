"""A sweep's page, its charts' data and its cancel; a member's run page naming its sweep; Run now with a sweep
profile on the disk page (the plan shown before, a refusal naming the point); the disk page's list of sweeps."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.models import Disk, Membership, Run, RunSet
from jobs.sets import requesting
from tests.factories import DiskFactory
from tests.sets.sweeps import finished_sweep, sweep_profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def knee_sweep(disk):
    """QD 1, 4, 16, 64 on the `disk` fixture (4,000 IOPS): a knee at QD 4 under the default rule."""
    profile = sweep_profile(disk.team, sweep_axes={"iodepth": "1,4,16,64"})
    return finished_sweep(disk, profile, [(1000, 100), (1900, 150), (2000, 400), (2050, 900)])


def test_the_page_of_a_finished_sweep_shows_its_state_plan_knee_rule_and_points(owner_client, knee_sweep):
    page = owner_client.get(f"/sets/{knee_sweep.pk}/")

    text = page.content.decode()
    assert page.status_code == 200
    assert f"<title>Sweep {knee_sweep.pk} · qd sweep on data · benchweb</title>" in text
    assert "finished: 4 of 4 points succeeded" in text
    assert "4 points × 5 s = 20 s" in text
    assert "knee at QD 4: 1,900 IOPS, p99 150 µs" in text
    assert "The knee is the first point after which no point gives 10 % more IOPS" in text
    members = list(knee_sweep.members.order_by("set_index"))
    for member in members:
        assert f'href="/runs/{member.pk}/"' in text
    assert "1,900 IOPS" in text and "7.8" in text  # 1,900 x 4 KiB = 7.8 MB/s
    assert 'class="knee-row"' in text


def test_the_chart_data_holds_each_point_the_limits_and_the_knee(owner_client, knee_sweep):
    data = owner_client.get(f"/sets/{knee_sweep.pk}/series.json").json()

    assert data["axis"] == "iodepth" and data["axis_name"] == "QD" and data["final"] is True
    (curve,) = data["curves"]
    assert [p["x"] for p in curve["points"]] == [1, 4, 16, 64]
    assert [p["iops"] for p in curve["points"]] == [1000, 1900, 2000, 2050]
    assert [p["p99_us"] for p in curve["points"]] == [100, 150, 400, 900]
    assert [p["p50_us"] for p in curve["points"]] == [50, 75, 200, 450]
    assert {p["limit_iops"] for p in curve["points"]} == {4000}
    assert curve["knee"]["axis"] == 4 and curve["block_size"] == "4k"


def test_thresholds_asked_for_find_the_knee_again_and_a_bad_one_is_named(owner_client, knee_sweep):
    # Under 3 % more IOPS and 100 % more p99, QD 4 still grows 5 % to QD 16: the knee moves to QD 16.
    page = owner_client.get(f"/sets/{knee_sweep.pk}/?iops_growth=3&p99_growth=100").content.decode()
    assert "knee at QD 16: 2,000 IOPS, p99 400 µs" in page
    assert "no point gives 3 % more IOPS and some point&#x27;s p99 is more than 100 % higher" in page
    data = owner_client.get(f"/sets/{knee_sweep.pk}/series.json?iops_growth=3&p99_growth=100").json()
    assert data["curves"][0]["knee"]["axis"] == 16

    bad = owner_client.get(f"/sets/{knee_sweep.pk}/?iops_growth=-5&p99_growth=lots").content.decode()
    assert "IOPS growth under (%): a percentage from 0.1 to 1000, not -5; the default is 10." in bad
    assert "p99 growth over (%): give a number, such as 10." in bad
    assert "knee at QD 4" in bad  # the default rule's, said so
    answer = owner_client.get(f"/sets/{knee_sweep.pk}/series.json?iops_growth=0")
    assert answer.status_code == 400 and "IOPS growth under (%)" in answer.json()["error"]


def test_a_member_run_page_links_back_to_its_sweep(owner_client, knee_sweep):
    third = knee_sweep.members.get(set_index=2)
    page = owner_client.get(f"/runs/{third.pk}/").content.decode()
    assert f'<a href="/sets/{knee_sweep.pk}/" id="run-set">point 3 of 4 of sweep {knee_sweep.pk}</a>' in page


def test_a_sweep_without_a_load_axis_shows_its_points_and_no_knee(owner_client, disk):
    profile = sweep_profile(disk.team, rw="randrw", sweep_axes={"block_size_bytes": "4k,64k", "read_percent": "100,50"})
    run_set = finished_sweep(disk, profile, [(3000, 200), (1200, 900), None, (800, 1500)])

    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()
    assert "varies neither the queue depth nor the number of jobs" in page
    assert "knee at" not in page
    assert "finished: 3 of 4 points succeeded; point 3 failed: fio aborted: the test said so" in page
    data = owner_client.get(f"/sets/{run_set.pk}/series.json").json()
    assert data["axis"] is None
    assert [p["label"] for p in data["points"]] == [
        "block size 4k, read share 100 %", "block size 4k, read share 50 %",
        "block size 64k, read share 100 %", "block size 64k, read share 50 %",
    ]  # fmt: skip
    assert [p["iops"] for p in data["points"]] == [3000, 1200, None, 800]


def test_cancel_from_the_page_ends_the_sweep(owner_client, disk, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team))
    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()
    assert "Point 1 of 3 is running" in page and "Cancel the sweep" in page

    with django_capture_on_commit_callbacks():
        answer = owner_client.post(f"/sets/{run_set.pk}/cancel")

    assert answer.status_code == 302 and answer["Location"] == f"/sets/{run_set.pk}/"
    run_set.refresh_from_db()
    assert run_set.cancel_requested
    assert list(run_set.members.order_by("set_index").values_list("state", flat=True))[1:] == ["cancelled"] * 2


def test_another_teams_sweep_is_a_404(owner_client):
    other = DiskFactory()
    run_set = finished_sweep(other, sweep_profile(other.team, sweep_axes={"iodepth": "1,2"}), [(10, 10), (20, 20)])
    assert owner_client.get(f"/sets/{run_set.pk}/").status_code == 404
    assert owner_client.get(f"/sets/{run_set.pk}/series.json").status_code == 404
    assert owner_client.post(f"/sets/{run_set.pk}/cancel").status_code == 404
    assert RunSet.objects.get(pk=run_set.pk).state == RunSet.State.SUCCEEDED
    assert Run.objects.filter(run_set=run_set, state=Run.State.SUCCEEDED).count() == 2


def test_run_now_with_a_sweep_profile_starts_the_sweep_and_opens_its_page(
    owner_client, disk, django_capture_on_commit_callbacks
):
    profile = sweep_profile(disk.team, sweep_axes={"iodepth": "1-16 x4"})
    form = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    # Before it runs, the form says what it will do: its points and its time.
    assert "qd sweep — sweep: 3 points × 5 s = 15 s</option>" in form
    assert "<strong>qd sweep</strong>: iodepth 1-16 x4, 3 points × 5 s = 15 s" in form

    with django_capture_on_commit_callbacks():
        answer = owner_client.post(f"/disks/{disk.pk}/", {"profile": profile.pk})

    run_set = RunSet.objects.get(disk=disk)
    assert answer.status_code == 302 and answer["Location"] == f"/sets/{run_set.pk}/"
    assert run_set.state == RunSet.State.RUNNING and run_set.members.count() == 3
    assert run_set.created_by.username == "olga"


def test_run_now_of_a_sweep_with_a_refused_point_names_the_point_and_starts_nothing(owner_client, host):
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/vdb", kind=Disk.Kind.BLOCK)
    profile = sweep_profile(host.team, tool="ndisk64", read_percent=100, sweep_axes={"read_percent": "100,50"})

    form = owner_client.get(f"/disks/{device.pk}/").content.decode()
    assert "qd sweep — cannot run here: point 2: destructive: disk not marked for destructive writes</option>" in form
    answer = owner_client.post(f"/disks/{device.pk}/", {"profile": profile.pk})

    assert answer.status_code == 200
    errors = answer.context["form"].errors["profile"]
    assert "point 2 of 2 (read share (-r) 50 %) is refused, so the whole sweep is, and nothing was started" in errors[0]
    assert not RunSet.objects.exists() and not Run.objects.exists()


def test_the_disk_page_lists_its_sweeps_with_their_knees(owner_client, disk, knee_sweep):
    page = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    assert f'<a href="/sets/{knee_sweep.pk}/">Sweep {knee_sweep.pk}</a>' in page
    assert "knee at QD 4: 1,900 IOPS, p99 150 µs" in page


def test_a_viewer_sees_the_sweep_but_cannot_cancel_it(disk, django_capture_on_commit_callbacks):
    viewer = User.objects.create_user("vera", password="a-long-viewer-password-2")
    Membership.objects.create(user=viewer, team=disk.team, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sweep(disk, sweep_profile(disk.team))

    assert "Cancel the sweep" not in client.get(f"/sets/{run_set.pk}/").content.decode()
    assert client.post(f"/sets/{run_set.pk}/cancel").status_code == 403
    run_set.refresh_from_db()
    assert not run_set.cancel_requested
