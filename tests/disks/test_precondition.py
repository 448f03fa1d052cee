"""Preconditioning without a host: the fill's job section run by real fio, the parser keeping the measured job
apart from it, live progress during the fill, the time allowed for it, the safety rules, the disk's record and
the fresh-block warning, and the profile and disk forms and API."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs import runners
from jobs.api.models import ApiToken
from jobs.disks import precondition
from jobs.models import Disk, Profile
from jobs.tools import fio
from jobs.tools.options import ToolOptionError
from tests.disks.preconditioning import RUN_DIR, RUN_ID, MiB, fill_params, run_fio
from tests.factories import ProfileFactory


def _final_jobs(raw: str) -> dict[str, dict]:
    docs, _ = fio.fio_json_documents(raw)
    return {job["jobname"]: job for job in docs[-1]["jobs"]}


def test_a_fill_on_a_device_writes_all_of_it_first_and_the_read_after_it_loses_readonly():
    job = fio.build_fio_job(fill_params(size_bytes=None, ioengine="libaio", direct=True), "/dev/loop7", "block",
                            RUN_DIR, readonly=False)  # fmt: skip
    fill, measured = job.jobfile.split(f"[benchweb-{RUN_ID}]")
    assert f"[precondition-{RUN_ID}]" in fill
    for line in ("rw=write", "bs=1048576", "iodepth=32", "direct=1", "loops=2", "filename=/dev/loop7",
                 "allow_file_create=0"):  # fmt: skip
        assert f"\n{line}\n" in fill
    assert "size=" not in fill and "runtime=" not in fill and "time_based" not in fill
    assert measured.startswith("\nstonewall\n") and "rw=randread" in measured
    assert "--readonly" not in job.argv and "allow_file_create=0" not in measured
    plain = fio.build_fio_job(fill_params(size_bytes=None, precondition=""), "/dev/loop7", "block", RUN_DIR,
                              readonly=False)  # fmt: skip
    assert "--readonly" in plain.argv and "[precondition-" not in plain.jobfile and "stonewall" not in plain.jobfile


def test_a_run_that_must_not_write_refuses_a_fill_and_an_unknown_precondition_names_its_field():
    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(fill_params(), "/data", "directory", RUN_DIR, readonly=True)
    assert refused.value.field == "precondition"
    with pytest.raises(ToolOptionError) as unknown:
        fio.build_fio_job(fill_params(precondition="trim"), "/data", "directory", RUN_DIR, readonly=False)
    assert unknown.value.field == "precondition" and "trim" in str(unknown.value)
    with pytest.raises(ToolOptionError) as passes:
        fio.build_fio_job(fill_params(precondition_passes=9), "/data", "directory", RUN_DIR, readonly=False)
    assert passes.value.field == "precondition_passes"


def test_small_test_files_are_filled_in_the_profiles_own_block_size():
    job = fio.build_fio_job(fill_params(size_bytes=256 * 1024), "/data", "directory", RUN_DIR, readonly=False)
    assert "\nbs=4096\n" in job.jobfile.split("[benchweb-")[0]


def test_real_fio_fills_the_test_files_and_the_result_is_the_measured_jobs_alone(fio_installed, tmp_path):
    raw = run_fio(tmp_path, fill_params(jobs=2, precondition_passes=3))
    jobs = _final_jobs(raw)
    printed_fill, printed = jobs[f"precondition-{RUN_ID}"], jobs[f"benchweb-{RUN_ID}"]

    summary = fio.parse_fio_json(raw).summary

    assert summary["precondition"] == {
        "bytes": printed_fill["write"]["io_bytes"],
        "seconds": printed_fill["write"]["runtime"] / 1000,
        "passes": 3,
    }
    assert summary["precondition"]["bytes"] == 3 * 2 * 16 * MiB
    assert summary["read"]["iops"] == pytest.approx(printed["read"]["iops"])
    assert summary["write"] is None and summary["total"]["iops"] == pytest.approx(printed["read"]["iops"])
    assert summary["runtime_s"] == printed["read"]["runtime"] / 1000
    assert summary["processes"] == 2 and summary["workload"]["rw"] == "randread"
    # The per-second samples are the measured job's, from its own start.
    assert summary["samples"] and summary["samples"][-1]["t_s"] == pytest.approx(summary["runtime_s"])
    assert all(sample["write_iops"] is None for sample in summary["samples"])


def test_live_progress_says_the_fill_is_running_then_shows_the_measured_jobs_iops(fio_installed, tmp_path):
    raw = run_fio(tmp_path, fill_params(size_bytes=8 * MiB, precondition_passes=1), fill_rate="4m")
    docs_at = [i for i in range(len(raw)) if raw.startswith('{\n  "fio version"', i)]
    runner = runners.FioRunner()

    while_filling = runner.progress(raw[: docs_at[1]], {})
    at_the_end = runner.progress(raw, {})

    assert while_filling["phase"] == "precondition" and 0 < while_filling["precondition_bytes"] <= 8 * MiB
    assert "read_iops" not in while_filling and "write_iops" not in while_filling
    assert "phase" not in at_the_end and at_the_end["read_iops"] > 0 and "write_iops" not in at_the_end


def test_the_eta_and_the_watchdog_allow_for_every_pass_of_the_fill():
    directory = fill_params(jobs=2, size_bytes=100 * MiB, precondition_passes=3, runtime_s=60)
    assert runners.fill_seconds(directory) == 30  # 600 MiB at 20 MiB/s
    assert runners.expected_seconds(directory) == 60 + 30
    assert runners.watchdog_seconds(directory, "directory") == 60 + 30 + 10 + runners.WATCHDOG_MARGIN_S
    device = fill_params(size_bytes=None, precondition_pass_bytes=10 * 2**30)
    assert runners.fill_seconds(device) == 1024  # 2 passes of 10 GiB
    assert runners.watchdog_seconds(device, "block") == 1 + 1024 + runners.WATCHDOG_MARGIN_S
    assert runners.fill_seconds(fill_params(precondition="")) == 0


def test_a_device_fill_is_sized_by_the_probe_or_not_started():
    params = fill_params(size_bytes=None)
    sized = precondition.sized_parameters(params, "block", {"identity": {"size_bytes": 64 * MiB}})
    assert sized["precondition_pass_bytes"] == 64 * MiB
    assert precondition.sized_parameters(params, "directory", {}) is params
    with pytest.raises(runners.ToolUnavailable, match="did not say the size"):
        precondition.sized_parameters(params, "block", {"identity": {}})


@pytest.mark.django_db
def test_a_fill_makes_a_read_profile_a_write_for_every_safety_rule(team, host):
    profile = ProfileFactory(team=team, rw="randread", size_bytes=None, precondition="fill")
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/sdz", kind=Disk.Kind.BLOCK)
    assert profile.writes and runners.writes(profile.parameters())
    assert device.destructive_for(profile)
    refusal = device.refusal_for(profile)
    assert refusal is not None and refusal.short == "destructive: disk not marked for destructive writes"
    assert refusal.message.startswith("its fill writes all of the device") and "without a fill" in refusal.message
    profile.precondition = ""
    assert not profile.writes and device.refusal_for(profile) is None


@pytest.mark.django_db
def test_a_record_counts_until_the_disks_identity_is_recorded_again(host):
    disk = Disk.objects.create(host=host, label="raw", target_path="/dev/sdz", kind=Disk.Kind.BLOCK)
    read = fill_params(size_bytes=None, precondition="")
    [fresh] = precondition.fresh_block_warnings(disk, read)
    assert "no preconditioning is on record" in fresh and "/dev/sdz" in fresh
    assert precondition.fresh_block_warnings(disk, read | {"precondition": "fill"}) == []

    filled_at = timezone.now() - timedelta(hours=1)
    precondition.record_by_hand(disk, at=filled_at, how="dd, twice", user=None)
    assert precondition.valid_record(disk) and precondition.fresh_block_warnings(disk, read) == []

    disk.identity_recorded_at = timezone.now()  # a different device was found at the path and recorded
    assert precondition.valid_record(disk) is None
    [stale] = precondition.fresh_block_warnings(disk, read)
    assert "predates the identity recorded on" in stale


@pytest.mark.django_db
def test_a_directory_warns_only_a_reading_profile_without_a_fill(host):
    disk = Disk.objects.create(host=host, label="dir", target_path="/data/bench")
    assert precondition.fresh_block_warnings(disk, fill_params(precondition=""))
    assert precondition.fresh_block_warnings(disk, fill_params(precondition="", rw="randrw"))
    assert precondition.fresh_block_warnings(disk, fill_params(precondition="", rw="write")) == []
    assert precondition.fresh_block_warnings(disk, fill_params()) == []


# Pages and API


def _profile_form(**changes) -> dict:
    data = {
        "name": "filled read", "description": "", "tool": "fio", "rw": "randread", "pattern": "random",
        "read_percent": "50", "block_size_bytes": "4k", "iodepth": "32", "jobs": "1", "runtime_s": "60",
        "ramp_time_s": "0", "time_based": "on", "direct": "on", "size_bytes": "1G", "ioengine": "libaio",
        "extra_options": "", "precondition": "fill", "precondition_passes": "2",
    }  # fmt: skip
    return data | changes


@pytest.mark.django_db
def test_the_profile_form_keeps_a_fill_and_its_preview_shows_the_fill_job(owner_client, team):
    preview = owner_client.get("/profiles/preview.json", _profile_form()).json()["text"]
    assert preview.index("[precondition-") < preview.index("[benchweb-") < preview.index("stonewall")
    assert "loops=2" in preview and "directory=/data/bench" in preview

    response = owner_client.post("/profiles/new/", _profile_form(precondition_passes="3"))
    profile = Profile.objects.get(team=team, name="filled read")
    assert response.status_code == 302 and (profile.precondition, profile.precondition_passes) == ("fill", 3)
    page = owner_client.get(f"/profiles/{profile.pk}/").content.decode()
    assert "after a fill ×3" in page and "loops=3" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"precondition_passes": "5"}, "precondition_passes", "less than or equal to 4"),
        ({"precondition_passes": "0"}, "precondition_passes", "greater than or equal to 1"),
        ({"precondition": "trim"}, "precondition", "not one of the available choices"),
        ({"tool": "ndisk64", "extra_options": ""}, "precondition", "Only fio profiles can fill"),
    ],
)
def test_the_profile_form_names_the_fill_field_at_fault(owner_client, team, changes, field, words):
    response = owner_client.post("/profiles/new/", _profile_form(**changes))
    assert response.status_code == 200
    assert words in " ".join(response.context["form"].errors[field])
    assert not Profile.objects.filter(team=team).exists()


def _api(owner, team) -> Client:
    _, secret = ApiToken.issue(owner, team, "tests")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def _send(client: Client, url: str, data: dict, method: str = "post"):
    return getattr(client, method)(url, json.dumps(data), content_type="application/json")


@pytest.mark.django_db
def test_the_profile_api_takes_a_fill_and_refuses_bad_ones_on_their_field(owner, team):
    api = _api(owner, team)
    base = {"name": "api fill", "rw": "read", "size_bytes": 2**20, "precondition": "fill", "precondition_passes": 2}
    created = _send(api, "/api/v1/profiles/", base)
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["precondition"], body["precondition_passes"], body["writes"]) == ("fill", 2, True)
    assert body["expected_seconds"] == 60 + 1  # 2 passes of 1 MiB at the 20 MiB/s floor, rounded up
    assert _send(api, "/api/v1/profiles/", base | {"name": "b", "precondition_passes": 9}).json().keys() == {
        "precondition_passes"
    }
    assert "precondition" in _send(api, "/api/v1/profiles/", base | {"name": "c", "precondition": "trim"}).json()
    ndisk = _send(api, "/api/v1/profiles/", base | {"name": "d", "tool": "ndisk64", "rw": "randread"}).json()
    assert "Only fio profiles can fill" in ndisk["precondition"][0]


@pytest.mark.django_db
def test_a_preconditioning_is_recorded_and_cleared_through_the_api_with_errors_naming_the_field(owner, team, host):
    api = _api(owner, team)
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/sdz", kind=Disk.Kind.BLOCK)
    url = f"/api/v1/disks/{device.pk}/precondition/"
    assert api.get(f"/api/v1/disks/{device.pk}/").json()["precondition_counts"] is False

    recorded = _send(api, url, {"how": "dd if=/dev/zero bs=1M, twice", "at": "2026-01-05T08:00:00Z"})

    assert recorded.status_code == 200, recorded.content
    body = recorded.json()
    assert body["precondition_counts"] is True
    assert body["precondition"] | {"at": None} == {"at": None, "how": "dd if=/dev/zero bs=1M, twice",
                                                    "source": "user", "run": None, "by": owner.username}  # fmt: skip
    assert body["precondition"]["at"].startswith("2026-01-05T08:00:00")

    future = (timezone.now() + timedelta(days=1)).isoformat()
    assert "in the future" in _send(api, url, {"how": "dd", "at": future}).json()["at"][0]
    assert _send(api, url, {"how": "  "}).json().keys() == {"how"}
    assert "at" in _send(api, url, {"how": "dd", "at": "yesterday"}).json()
    directory = Disk.objects.create(host=host, label="dir", target_path="/data/bench")
    refused = _send(api, f"/api/v1/disks/{directory.pk}/precondition/", {"how": "dd"})
    assert refused.status_code == 400 and "option “fill”" in refused.json()["how"][0]
    device.refresh_from_db()
    assert device.precondition["how"] == "dd if=/dev/zero bs=1M, twice"  # the refusals kept the record

    cleared = api.delete(url)
    assert cleared.status_code == 200 and cleared.json()["precondition"] == {}
    assert cleared.json()["precondition_counts"] is False


@pytest.mark.django_db
def test_the_disk_page_records_a_preconditioning_shows_it_and_clears_it(owner_client, host):
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/sdz", kind=Disk.Kind.BLOCK)
    page = owner_client.get(f"/disks/{device.pk}/").content.decode()
    assert "nothing on record" in page and 'name="how"' in page

    bad = owner_client.post(f"/disks/{device.pk}/precondition/", {"how": "", "at": ""}, follow=True)
    assert "Nothing was recorded. How: say how the disk was filled" in bad.content.decode()
    assert Disk.objects.get(pk=device.pk).precondition == {}
    owner_client.post(f"/disks/{device.pk}/precondition/", {"how": "fio fill by hand ×2", "at": "2026-01-05T08:00"})
    device.refresh_from_db()
    assert device.precondition["how"] == "fio fill by hand ×2" and device.precondition["source"] == "user"

    page = owner_client.get(f"/disks/{device.pk}/").content.decode()
    assert "fio fill by hand ×2" in page and "recorded by" in page and "No longer counts" not in page
    Disk.objects.filter(pk=device.pk).update(identity_recorded_at=timezone.now())
    assert "No longer counts" in owner_client.get(f"/disks/{device.pk}/").content.decode()

    owner_client.post(f"/disks/{device.pk}/precondition/", {"clear": "1"})
    device.refresh_from_db()
    assert device.precondition == {}


@pytest.mark.django_db
def test_a_directory_disk_page_shows_a_runs_fill_but_offers_no_record_by_hand(owner_client, host):
    directory = Disk.objects.create(host=host, label="dir", target_path="/data/bench")
    Disk.objects.filter(pk=directory.pk).update(
        precondition={
            "at": timezone.now().isoformat(),
            "how": "sequential write of the run's test files ×2",
            "source": "run",
            "run": 7,
        }
    )
    page = owner_client.get(f"/disks/{directory.pk}/").content.decode()
    assert "test files ×2" in page and "run #7" in page
    assert "only a fio profile with the option “fill”" in page and 'name="how"' not in page


def test_a_fill_that_fails_fails_the_run_with_fios_own_words(fio_installed, tmp_path):
    """A 1 MiB tmpfs cannot take a 4 MiB test file: fio's ENOSPC in the fill is the run's error, not lost with
    the fill's entries. (The preflight's free-space check stops such a run before it starts; this is the path
    for a filesystem that fills up meanwhile.)"""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tiny)], check=True)
    try:
        params = fill_params(size_bytes=4 * MiB, precondition_passes=1)
        job = fio.build_fio_job(params, str(tiny), "directory", str(tmp_path / RUN_ID), readonly=False)
        (tmp_path / "job.fio").write_text(job.jobfile)
        output = tmp_path / "result.json"
        done = subprocess.run(["fio", "--output-format=json", f"--output={output}", str(tmp_path / "job.fio")],
                              capture_output=True, timeout=60, check=False)  # fmt: skip
    finally:
        subprocess.run(["umount", str(tiny)], check=False)
    outcome = runners.FioRunner().interpret(
        {"result.json": output.read_bytes(), "stdout": b"", "stderr": b""}, done.returncode, params
    )
    assert outcome.state == "failed"
    assert f"job precondition-{RUN_ID} error 28 (No space left on device)" in outcome.explanation
    assert outcome.summary is not None and outcome.summary["precondition"]["bytes"] < 4 * MiB
