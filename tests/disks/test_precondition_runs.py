"""Preconditioning end to end: a real worker, sshd and fio on loop devices and directories.

A fill before a read writes the whole target, so it is held to every rule of a write; a run on blocks benchweb
knows were never written carries the fresh-block warning, on its page and in the API.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.api.models import ApiToken
from jobs.models import Disk, Membership, Run
from jobs.runs import queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.loops import sh

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MiB = 2**20


def _api(team) -> Client:
    user = User.objects.create_user("reader", email="reader@example.com")
    Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
    _, secret = ApiToken.issue(user, team, "tests")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def _fresh(run: Run) -> list[str]:
    return [warning for warning in run.warnings if warning.startswith("Fresh blocks")]


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_fill_writes_the_whole_device_records_it_and_later_reads_carry_no_warning(fio_installed, sshd, worker, lab):
    team, host = team_with_host(sshd)
    device = lab.loop("blank")
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom", allow_destructive=True)  # fmt: skip
    filled = quick_profile(team, name="fill then read", size_bytes=None, runtime_s=1, precondition="fill",
                           precondition_passes=2)  # fmt: skip
    untouched = _sha256(device)

    run = wait_final(queueing.request_run(disk, filled))

    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert run.destructive
    device_bytes = int(Path(f"/sys/class/block/{Path(device).name}/size").read_text()) * 512
    fill = run.summary["precondition"]
    assert (fill["bytes"], fill["passes"]) == (2 * device_bytes, 2) and fill["seconds"] > 0
    assert _sha256(device) != untouched
    # The device's last MiB was written too (the image was all zeros).
    with open(device, "rb") as f:
        f.seek(-MiB, 2)
        assert f.read(MiB) != bytes(MiB)
    assert run.summary["read"]["iops"] > 0 and run.summary["write"] is None
    assert "[precondition-" in run.command and "stonewall" in run.command and "--readonly" not in run.command
    assert run.parameters["precondition_pass_bytes"] == device_bytes
    assert _fresh(run) == []
    disk.refresh_from_db()
    assert disk.precondition["source"] == "run" and disk.precondition["run"] == run.pk
    assert disk.precondition["how"].startswith("sequential write of the whole device ×2 (32 MiB written in ")

    plain = wait_final(queueing.request_run(disk, quick_profile(team, name="plain read", size_bytes=None,
                                                                runtime_s=1)))  # fmt: skip
    assert plain.state == Run.State.SUCCEEDED, plain.explanation
    assert "--readonly" in plain.command and "[precondition-" not in plain.command
    assert _fresh(plain) == []
    assert _api(team).get(f"/api/v1/runs/{plain.pk}/").json()["warnings"] == plain.warnings


def test_a_read_on_a_fresh_device_carries_the_warning_on_its_page_and_in_the_api(
    fio_installed, sshd, worker, lab, client
):
    team, host = team_with_host(sshd)
    device = lab.loop("fresh")
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom")  # fmt: skip
    untouched = _sha256(device)

    run = wait_final(queueing.request_run(disk, quick_profile(team, size_bytes=None, runtime_s=1)))

    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert _sha256(device) == untouched
    [warning] = _fresh(run)
    assert device in warning and "no preconditioning is on record" in warning
    assert "“fill”" in warning and "disk page" in warning
    api = _api(team)
    assert warning in api.get(f"/api/v1/runs/{run.pk}/").json()["warnings"]
    client.force_login(User.objects.get(username="reader"))
    assert "Fresh blocks: benchweb knows of no write that filled" in client.get(f"/runs/{run.pk}/").content.decode()
    # The disk chart marks the run: its point counts the warning, the page brings its words.
    (drawn,) = client.get(f"/disks/{disk.pk}/series.json?range=all").json()["series"]
    assert drawn["iops"]["total"]["warnings"] == [len(run.warnings)]
    assert '"Fresh blocks"' in client.get(f"/disks/{disk.pk}/").content.decode()


def test_a_directory_read_warns_unless_the_profile_fills_its_test_files_first(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    target = target_dir(tmp_path)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target, disk_type="custom")

    plain = wait_final(queueing.request_run(disk, quick_profile(team, runtime_s=1)))
    filled = wait_final(queueing.request_run(disk, quick_profile(
        team, name="filled", runtime_s=1, jobs=2, precondition="fill", precondition_passes=3)))  # fmt: skip

    assert plain.state == filled.state == Run.State.SUCCEEDED, (plain.explanation, filled.explanation)
    [warning] = _fresh(plain)
    assert "laid out by fio just now" in warning and "“fill”" in warning
    assert _fresh(filled) == []
    assert filled.summary["precondition"]["bytes"] == 3 * 2 * 16 * MiB
    assert filled.summary["precondition"]["passes"] == 3
    assert filled.summary["processes"] == 2 and filled.summary["write"] is None
    # The measured job read the files the fill wrote, then removed them; the samples start with it.
    assert filled.samples.count() >= 1 and filled.samples.order_by("t_s").first().t_s <= 1.5
    assert list(Path(target).iterdir()) == []
    disk.refresh_from_db()
    assert disk.precondition["source"] == "run" and "the run's test files ×3" in disk.precondition["how"]


def test_a_fill_on_a_device_holding_a_filesystem_is_refused_with_nothing_written(fio_installed, sshd, worker, lab):
    team, host = team_with_host(sshd)
    device = lab.loop("ext4")
    sh("mkfs.ext4", "-q", device)
    before = _sha256(device)
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom")  # fmt: skip
    filled = quick_profile(team, size_bytes=None, runtime_s=1, precondition="fill", precondition_passes=1)

    with pytest.raises(queueing.RunRefused, match="destructive"):
        queueing.request_run(disk, filled)
    disk.allow_destructive = True
    disk.save()
    run = wait_final(queueing.request_run(disk, filled))

    assert run.state == Run.State.ERROR
    assert run.explanation.startswith("refused, nothing was written") and "ext4" in run.explanation
    assert _sha256(device) == before
    disk.refresh_from_db()
    assert disk.precondition == {}


def test_a_run_that_fails_in_fio_keeps_no_fresh_block_warning_nor_any_other_stamp(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    # Stored before profiles were refused such sizes (the factory does not clean): fio refuses it at once.
    impossible = quick_profile(team, name="too big a block", block_size_bytes=32 * MiB, size_bytes=16 * MiB)

    run = wait_final(queueing.request_run(disk, impossible))

    assert run.state == Run.State.FAILED, run.explanation
    assert "size too small" in run.explanation
    assert run.warnings == [] and run.steady_state is None
    assert _api(team).get(f"/api/v1/runs/{run.pk}/").json()["warnings"] == []
    client = Client()
    client.force_login(User.objects.get(username="reader"))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Fresh blocks" not in page and "run-warning" not in page and 'id="run-steady"' not in page
