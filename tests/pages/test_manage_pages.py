"""The management pages: hosts, disks, profiles, import, compare and the overview, through the Django test client."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Credential, Disk, Host, Membership, Profile, Run, Team
from jobs.results import overview
from tests.browser import assert_fits, settle
from tests.factories import HostFactory, RunFactory
from tests.hosts.forms import host_form_data

FIXTURES = Path(__file__).parent.parent / "fixtures"
BAD_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90LWEta2V5LWF0LWFsbA==\n-----END OPENSSH PRIVATE KEY-----\n"


def _client_for(username: str, team: Team, role: str) -> Client:
    user = User.objects.create_user(username, password="x-long-password-9")
    Membership.objects.create(user=user, team=team, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def rival_client(db) -> Client:
    return _client_for("rival", Team.objects.create(name="rivals"), "owner")


@pytest.fixture
def viewer_client(team) -> Client:
    return _client_for("vera", team, "viewer")


def _disk_data(**changes) -> dict:
    data = {
        "label": "ultra8",
        "target_path": "/data/bench",
        "kind": "directory",
        "disk_type": "alibaba-ultra",
        "size": "400",
        "stripes": "8",
        "throughput_unit": "MB/s",
    }
    return data | changes


def _profile_data(**changes) -> dict:
    data = {
        "name": "my randread",
        "description": "",
        "tool": "fio",
        "rw": "randread",
        "pattern": "random",
        "read_percent": "50",
        "block_size_bytes": "4k",
        "iodepth": "32",
        "jobs": "1",
        "runtime_s": "60",
        "ramp_time_s": "0",
        "time_based": "on",
        "direct": "on",
        "size_bytes": "1G",
        "ioengine": "libaio",
        "extra_options": "",
    }
    return data | changes


def _finished_run(disk: Disk, *, profile_name: str, iops: float, limit: float, days_ago: float = 0, **fields) -> Run:
    finished = timezone.now() - timedelta(days=days_ago)
    summary = {
        "tool": "fio",
        "total": {"iops": iops, "bw_bytes_per_s": iops * 4096},
        "read": {
            "iops": iops,
            "bw_bytes_per_s": iops * 4096,
            "clat_us": {"p50": 250.0, "p90": 400.0, "p95": 500.0, "p99": 900.0, "p99_9": 4200.0},
        },
        "write": None,
    }
    values = {
        "disk": disk,
        "profile_name": profile_name,
        "finished_at": finished,
        "started_at": finished - timedelta(seconds=60),
        "summary": summary,
        "limits_snapshot": {"iops": limit, "effective_iops": limit},
    }
    # recorded: its RunResult is kept, as services do wherever a finished run's summary is stored
    return RunFactory(succeeded=True, recorded=True, **(values | fields))


# ----------------------------------------------------------------------------------------- hosts


def test_a_host_registered_with_a_new_private_key_stores_it_encrypted_and_never_shows_it(owner_client, sshd):
    response = owner_client.post("/hosts/new/", host_form_data(private_key=sshd.private_key))
    host = Host.objects.get(name="db1")
    assert response.status_code == 302 and response["Location"] == f"/hosts/{host.pk}/"
    credential = host.credential
    assert credential.kind == Credential.Kind.PRIVATE_KEY and credential.name == "db1 login"
    assert credential.reveal_secret().strip() == sshd.private_key.strip()
    key_body = sshd.private_key.strip().splitlines()[1]
    assert key_body not in credential.secret_token
    for url in ["/hosts/", f"/hosts/{host.pk}/", f"/hosts/{host.pk}/edit/", f"/hosts/{host.pk}/test/", "/overview/"]:
        page = owner_client.get(url)
        assert page.status_code == 200, url
        assert key_body not in page.content.decode(), url


def test_a_bad_private_key_is_refused_on_its_field_and_nothing_is_created(owner_client, team):
    response = owner_client.post("/hosts/new/", host_form_data(private_key=BAD_KEY))
    assert response.status_code == 200
    assert "could not be read" in " ".join(response.context["form"].errors["private_key"])
    page = response.content.decode()
    assert "bm90LWEta2V5LWF0LWFsbA" not in page
    assert 'value="10.0.0.5"' in page  # what was typed is kept
    assert not Host.objects.exists() and not Credential.objects.exists()


def test_an_encrypted_key_without_its_passphrase_is_refused_on_the_passphrase(owner_client, team, tmp_path):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "right-phrase", "-f", str(tmp_path / "k")], check=True)
    response = owner_client.post("/hosts/new/", host_form_data(private_key=(tmp_path / "k").read_text()))
    assert "needs its passphrase" in " ".join(response.context["form"].errors["passphrase"])
    assert not Host.objects.exists()


def test_a_host_can_use_a_stored_credential_and_be_disabled(owner_client, host, credential):
    data = host_form_data(name="vm1", credential_mode="existing", credential=str(credential.pk))
    del data["enabled"]
    assert owner_client.post(f"/hosts/{host.pk}/edit/", data).status_code == 302
    host.refresh_from_db()
    assert (host.enabled, host.credential_id, host.address) == (False, credential.pk, "10.0.0.5")
    page = owner_client.get("/hosts/").content.decode()
    assert "no — disabled" in page


def test_the_connection_test_runs_uname_and_looks_for_fio(owner_client, team, sshd):
    host = HostFactory.for_sshd(sshd, team=team, name="loop", credential__name="k")
    page = owner_client.post(f"/hosts/{host.pk}/test/").content.decode()
    assert "Connected and logged in" in page
    assert "Linux" in page


def test_the_connection_test_asks_for_an_approved_key_first(owner_client, host):
    page = owner_client.post(f"/hosts/{host.pk}/test/").content.decode()
    assert "scan and approve the host key first" in page


# ----------------------------------------------------------------------------------------- disks


def test_a_striped_ultra_disk_shows_its_40000_iops_on_its_page(owner_client, host):
    response = owner_client.post(f"/hosts/{host.pk}/disks/new/", _disk_data())
    disk = Disk.objects.get(label="ultra8")
    assert response["Location"] == f"/disks/{disk.pk}/"
    assert (disk.team_id, disk.size, disk.stripes) == (host.team_id, 400, 8)
    assert "40,000 IOPS" in owner_client.get(response["Location"]).content.decode()


def test_a_size_out_of_range_is_refused_on_the_size_and_keeps_what_was_typed(owner_client, host):
    response = owner_client.post(f"/hosts/{host.pk}/disks/new/", _disk_data(size="10", label="typed-label"))
    assert response.status_code == 200
    assert "outside the published range" in " ".join(response.context["form"].errors["size"])
    page = response.content.decode()
    assert 'value="typed-label"' in page and 'value="10"' in page
    assert not Disk.objects.filter(label="typed-label").exists()


def test_throughput_is_typed_in_the_chosen_unit_and_stored_in_bytes(owner_client, disk):
    data = _disk_data(
        label="data",
        disk_type="custom",
        size="",
        stripes="1",
        spec_iops="4000",
        spec_bytes_per_s="125",
        throughput_unit="MiB/s",
    )
    assert owner_client.post(f"/disks/{disk.pk}/edit/", data).status_code == 302
    disk.refresh_from_db()
    assert disk.spec_bytes_per_s == 125 * 2**20
    page = owner_client.get(f"/disks/{disk.pk}/edit/").content.decode()
    assert 'value="125' in page and 'value="MiB/s" selected' in page


def test_allowing_writes_on_a_block_device_needs_a_confirmation(owner_client, host):
    data = _disk_data(kind="block", target_path="/dev/vdb", allow_destructive="on")
    response = owner_client.post(f"/hosts/{host.pk}/disks/new/", data)
    assert "destroy everything" in " ".join(response.context["form"].errors["confirm_destructive"])
    assert not Disk.objects.filter(label="ultra8").exists()
    assert owner_client.post(f"/hosts/{host.pk}/disks/new/", data | {"confirm_destructive": "on"}).status_code == 302


def test_the_limits_preview_names_the_spec_field_at_fault(owner_client, team):
    ok = owner_client.get("/disks/limits-preview.json", _disk_data()).json()
    assert ok["text"].startswith("40,000 IOPS")
    bad = owner_client.get("/disks/limits-preview.json", _disk_data(size="10")).json()
    assert "outside the published range" in bad["errors"]["size"]


# ----------------------------------------------------------------------------------------- profiles


def test_a_forbidden_extra_option_is_refused_on_its_field(owner_client, team):
    response = owner_client.post("/profiles/new/", _profile_data(extra_options="exec_prerun=rm -rf /"))
    assert response.status_code == 200
    assert "not allowed" in " ".join(response.context["form"].errors["extra_options"])
    assert not Profile.objects.filter(team=team).exists()


def test_a_latency_target_typed_in_ms_makes_the_profile_a_search_and_a_rate_option_beside_it_is_refused(
    owner_client, team
):
    saved = owner_client.post("/profiles/new/", _profile_data(sla_target_us="1.5ms", sla_percentile="p99.9"))
    assert saved.status_code == 302, saved.context["form"].errors
    profile = Profile.objects.get(team=team)
    assert (profile.is_sla, profile.sla_target_us, profile.sla_percentile, profile.sla_max_runs) == (
        True, 1500, "p99.9", 8)  # fmt: skip
    assert 'value="1500us"' in owner_client.get(f"/profiles/{profile.pk}/edit/").content.decode()

    refused = owner_client.post("/profiles/new/", _profile_data(name="capped", sla_target_us="800",
                                                                extra_options="rate_iops=500"))  # fmt: skip
    assert "remove rate_iops" in " ".join(refused.context["form"].errors["extra_options"])
    unreadable = owner_client.post("/profiles/new/", _profile_data(name="x", sla_target_us="soon"))
    assert unreadable.context["form"].errors["sla_target_us"] == [
        "Give a latency such as 800us, 1ms or 1.5ms, not 'soon'."
    ]


BLOCK_OVER_FILE = "The block size (3 GiB) is larger than the file size per job (128 MiB)"


def test_a_block_size_larger_than_the_file_per_job_is_refused_on_the_block_size_with_the_fix(owner_client, team):
    response = owner_client.post("/profiles/new/", _profile_data(block_size_bytes="3G", size_bytes="128M"))
    assert response.status_code == 200
    (error,) = [e for e in response.context["form"].errors["block_size_bytes"] if e.startswith(BLOCK_OVER_FILE)]
    assert error.endswith("Make the block size at most 128 MiB, or the file size per job at least 3 GiB.")
    page = response.content.decode()
    assert html.escape(BLOCK_OVER_FILE) in page and 'value="3G"' in page and 'value="128M"' in page
    assert not Profile.objects.filter(team=team).exists()


def test_the_api_and_the_model_refuse_a_block_size_no_job_can_run(owner, team):
    from jobs.api.models import ApiToken

    api = Client(headers={"Authorization": f"Bearer {ApiToken.issue(owner, team, 'p')[1]}"})
    body = {"name": "too big", "rw": "randread", "block_size_bytes": 2**30, "size_bytes": 128 * 2**20}
    refused = api.post("/api/v1/profiles/", body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["block_size_bytes"] == [
        "The block size (1 GiB) is larger than the file size per job (128 MiB): fio cannot run a job whose file is "
        "smaller than one block. Make the block size at most 128 MiB, or the file size per job at least 1 GiB."
    ]
    split = api.post("/api/v1/profiles/", body | {"block_size_bytes": 64 * 2**20, "extra_options": {"nrfiles": "4"}},
                     content_type="application/json")  # fmt: skip
    assert split.status_code == 400 and "each of the 4 files (nrfiles)" in split.json()["block_size_bytes"][0]
    odd = api.post("/api/v1/profiles/", body | {"block_size_bytes": 1000}, content_type="application/json")
    assert odd.status_code == 400 and "whole number of 512-byte sectors" in odd.json()["block_size_bytes"][0]
    buffered = api.post("/api/v1/profiles/", body | {"block_size_bytes": 1000, "direct": False},
                        content_type="application/json")  # fmt: skip
    assert buffered.status_code == 201, buffered.content  # without direct I/O any block size is fine
    # A profile stored before this rule is refused at its next save too, by the model's own check.
    edited = Profile(team=team, name="old", block_size_bytes=2**30, size_bytes=2**27)
    with pytest.raises(ValidationError) as raised:
        edited.full_clean()
    assert "block_size_bytes" in raised.value.message_dict
    assert Profile.objects.filter(team=team).count() == 1


def test_the_profile_preview_shows_the_exact_job_file(owner_client, team):
    preview = owner_client.get("/profiles/preview.json", _profile_data()).json()
    assert "rw=randread" in preview["text"] and "bs=4096" in preview["text"]
    assert "directory=/data/bench" in preview["text"]
    response = owner_client.post("/profiles/new/", _profile_data(extra_options="norandommap=1"))
    profile = Profile.objects.get(team=team, name="my randread")
    assert response["Location"] == f"/profiles/{profile.pk}/"
    page = owner_client.get(response["Location"]).content.decode()
    assert "rw=randread" in page and "bs=4096" in page and "norandommap=1" in page


def test_an_ndisk64_profile_previews_its_command_line(owner_client, team):
    data = _profile_data(tool="ndisk64", block_size_bytes="4k", size_bytes="32M", jobs="4")
    preview = owner_client.get("/profiles/preview.json", data).json()
    assert preview["text"].startswith("ndisk64 -R -r 50 -M 4 -b 4K -s 32M -t 60 -D -f /data/bench/benchweb-")


def test_a_preset_is_copied_into_the_team_on_save_and_stays_unchanged(owner_client, team):
    preset = Profile.objects.filter(builtin=True).first()
    form = owner_client.get(f"/profiles/{preset.pk}/copy/").context["form"]
    assert not Profile.objects.filter(team=team).exists()  # the copy form saves nothing by itself
    data = {name: form[name].value() for name in form.fields}
    # What a browser submits: an unticked box is left out.
    data = {k: ("on" if v is True else v) for k, v in data.items() if v is not None and v is not False}
    response = owner_client.post(f"/profiles/{preset.pk}/copy/", data)
    copy = Profile.objects.get(team=team)
    assert response["Location"] == f"/profiles/{copy.pk}/"
    assert copy.name == f"{preset.name} (copy)" and not copy.builtin
    assert copy.parameters() == preset.parameters()
    second = owner_client.get(f"/profiles/{preset.pk}/copy/").context["form"]
    assert second["name"].value() == f"{preset.name} (copy 2)"
    edit = owner_client.get(f"/profiles/{preset.pk}/edit/")
    assert edit.status_code == 302 and edit["Location"] == f"/profiles/{preset.pk}/"


# ----------------------------------------------------------------------------------------- import


def _confirmation(page: str) -> dict:
    """What a browser submits from the confirmation form: hidden inputs and hidden textareas."""
    form = page[page.index('<form method="post" class="confirm"') :]
    form = form[: form.index("</form>")]
    data: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form):
        data.setdefault(name, []).append(html.unescape(value))
    # An HTML parser drops the one newline that follows <textarea>.
    data["source_text"] = [
        html.unescape(text).removeprefix("\n")
        for text in re.findall(r'<textarea name="source_text"[^>]*>(.*?)</textarea>', form, re.S)
    ]
    return data


def test_an_import_shows_the_numbers_first_and_stores_them_only_on_save(owner_client, disk):
    fio_text = (FIXTURES / "fio-3.33-randrw.json").read_text()
    ndisk_text = (FIXTURES / "ndisk_4proc_random_direct.txt").read_text()
    with (
        open(FIXTURES / "fio-3.33-randrw.json", "rb") as fio,
        open(FIXTURES / "ndisk_4proc_random_direct.txt", "rb") as ndisk,
    ):
        response = owner_client.post(
            "/import/",
            {
                "step": "preview",
                "disk": disk.pk,
                "tool": "auto",
                "finished_at": "2026-01-05T03:30",
                "files": [fio, ndisk],
            },
        )
    page = response.content.decode()
    # As the tools printed them: fio JSON's read + write summed in decimal, ndisk64's TOTALS row.
    assert "27,756.081306 IOPS" in page and "20,030.0 IO/s" in page and "80,119.94 KB/s" in page
    assert "35.6 µs" in page  # fio read p50
    assert "fio-json" in page and "ndisk64" in page
    assert not Run.objects.exists()

    data = _confirmation(page)
    assert data["source_text"] == [fio_text, ndisk_text]
    response = owner_client.post("/import/", data)
    assert response.status_code == 302 and response["Location"] == f"/disks/{disk.pk}/"
    runs = list(Run.objects.order_by("pk"))
    assert [r.trigger for r in runs] == [Run.Trigger.IMPORT, Run.Trigger.IMPORT]
    assert [r.summary["tool"] for r in runs] == ["fio", "ndisk64"]
    assert runs[1].summary["total"]["iops"] == pytest.approx(20030.0)
    assert runs[0].raw_output == fio_text
    assert timezone.localtime(runs[0].finished_at).strftime("%Y-%m-%d %H:%M") == "2026-01-05 03:30"


def test_pasted_text_survives_the_round_trip_with_browser_line_breaks(owner_client, disk):
    text = (FIXTURES / "fio-3.33-randrw.txt").read_text()
    page = owner_client.post(
        "/import/", {"step": "preview", "disk": disk.pk, "tool": "auto", "text": text.replace("\n", "\r\n")}
    ).content.decode()
    data = _confirmation(page)
    data["source_text"] = [t.replace("\n", "\r\n") for t in data["source_text"]]
    response = owner_client.post("/import/", data)
    run = Run.objects.get()
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.raw_output == text and run.profile_name == "randrw 4k QD1"  # named by its workload
    assert run.parameters["source"] == "pasted text"


def test_unreadable_input_says_why_and_stores_nothing(owner_client, disk):
    response = owner_client.post(
        "/import/", {"step": "preview", "disk": disk.pk, "tool": "auto", "text": "hello, this is not fio"}
    )
    page = response.content.decode()
    assert "This is not output benchweb can read" in page
    assert 'name="step" value="save"' not in page
    saved = owner_client.post(
        "/import/",
        {
            "step": "save",
            "disk": disk.pk,
            "tool": "auto",
            "finished_at": "",
            "source_name": "x",
            "source_text": "hello",
        },
    )
    assert saved.status_code == 200 and "This is not output benchweb can read" in saved.content.decode()
    assert not Run.objects.exists()


def test_an_import_from_the_future_is_refused(owner_client, disk):
    later = (timezone.localtime() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    response = owner_client.post(
        "/import/",
        {
            "step": "preview",
            "disk": disk.pk,
            "tool": "auto",
            "finished_at": later,
            "text": (FIXTURES / "fio-3.33-randrw.json").read_text(),
        },
    )
    assert "in the future" in " ".join(response.context["form"].errors["finished_at"])


# ----------------------------------------------------------------------------------------- compare and overview


def test_comparing_two_disks_shows_measured_theoretical_and_efficiency(owner_client, host, disk):
    other = Disk.objects.create(host=host, label="logs", target_path="/logs", spec_iops=8000)
    _finished_run(disk, profile_name="4k randread", iops=2000, limit=4000)
    _finished_run(disk, profile_name="4k randread", iops=3000, limit=4000, days_ago=3)
    _finished_run(other, profile_name="4k randread", iops=7600, limit=8000)
    response = owner_client.get(f"/compare/?disks={disk.pk},{other.pk}")
    page = response.content.decode()
    assert "Measured IOPS" in page and "Theoretical IOPS" in page
    assert "50 %" in page and "95 %" in page  # the newest run of each disk
    assert "250 µs" in page and "4.2 ms" in page
    chart = response.context["chart"]
    assert chart["labels"] == ["4k randread"]
    assert [d["data"] for d in chart["datasets"]] == [[2000], [4000], [7600], [8000]]
    assert 'id="compare-data"' in page and "<script>" not in page.replace('<script src="', "")


def test_comparing_runs_and_a_wrong_count(owner_client, disk):
    a = _finished_run(disk, profile_name="a", iops=1000, limit=4000)
    b = _finished_run(disk, profile_name="b", iops=2000, limit=4000)
    page = owner_client.get(f"/compare/?runs={a.pk}&runs={b.pk}").content.decode()
    assert f">#{a.pk}</a>" in page and "a · vm1:data" in page and "25 %" in page and "50 %" in page
    assert "Pick 2 to 8; you picked 1." in owner_client.get(f"/compare/?runs={a.pk}").content.decode()


def _runs_on_two_kernels(disk: Disk) -> tuple[Run, Run]:
    """A run on kernel 6.1 finished yesterday and, stored after it (an import, say), one on 5.10 two days ago."""
    newer = _finished_run(disk, profile_name="4k randread", iops=3000, limit=4000, days_ago=1,
                          environment={"kernel": "6.1.0-13-amd64"})  # fmt: skip
    older = _finished_run(disk, profile_name="4k randread", iops=2000, limit=4000, days_ago=2,
                          environment={"kernel": "5.10.0-21-amd64"})  # fmt: skip
    return older, newer


@pytest.mark.parametrize("order", ["newer first", "older first"])
def test_the_environment_of_compared_runs_reads_older_to_newer_whatever_the_order_picked(owner_client, disk, order):
    older, newer = _runs_on_two_kernels(disk)
    picked = [newer, older] if order == "newer first" else [older, newer]
    page = owner_client.get(f"/compare/?{'&'.join(f'runs={run.pk}' for run in picked)}").content.decode()
    changes = html.unescape(re.sub(r"<[^>]+>", "", page.split('id="environment-changes"')[1].split("</section>")[0]))
    assert f"#{older.pk} → #{newer.pk}: kernel 5.10.0-21-amd64 → 6.1.0-13-amd64" in changes
    assert f"#{newer.pk} → #{older.pk}" not in changes


def test_the_overview_shows_results_running_and_failed_runs(owner_client, disk):
    _finished_run(disk, profile_name="4k randread", iops=3000, limit=4000, days_ago=2)
    _finished_run(disk, profile_name="4k randread", iops=3600, limit=4000)
    RunFactory(
        disk=disk,
        profile_name="long read",
        running=True,
        # Read 20 s ago, started 30 s ago: the overview says where it is now (25 %, 90 s left), not where it was.
        started_at=timezone.now() - timedelta(seconds=30),
        progress={"elapsed_s": 10, "expected_s": 120, "eta_s": 110},
    )
    RunFactory(
        disk=disk,
        profile_name="write",
        state=Run.State.ERROR,
        finished_at=timezone.now(),
        explanation="could not start: fio is not installed on vm1",
    )
    page = owner_client.get("/overview/").content.decode()
    assert "3.6k IOPS" in page and "90 %" in page
    assert '<svg class="spark"' in page and "spark-limit" in page
    assert "long read" in page and 'value="25"' in page and "about 90 s left" in page
    assert "could not start: fio is not installed on vm1" in page


def test_running_now_lists_the_runs_waiting_for_their_stagger_slot_with_the_time(owner_client, disk):
    """Scheduled runs wait pending for their slot (not_before), then, claimed a little early, running on their
    host until it comes: both are in Running now, saying until when, beside a run that is due already."""
    now = timezone.now()
    slot, later = now + timedelta(minutes=4, seconds=30), now + timedelta(minutes=9)
    RunFactory(disk=disk, profile_name="due read", explanation="waiting: disk busy with run 7")
    RunFactory(disk=disk, profile_name="slot read", not_before=slot, explanation="waiting to start")
    RunFactory(disk=disk, profile_name="early read", running=True, not_before=later, started_at=later)
    page = owner_client.get("/overview/").content.decode()
    running_now = re.sub(r"<[^>]+>", "", page.split('id="running"')[1].split("</section>")[0])
    for name in ("due read", "slot read", "early read"):
        assert name in running_now
    assert "waiting: disk busy with run 7" in running_now
    for moment in (slot, later):
        assert f"waiting until {moment.astimezone(UTC):%H:%M:%S} UTC" in running_now
    assert running_now.index("due read") < running_now.index("slot read")


def test_running_now_counts_the_waiting_runs_it_does_not_list(owner_client, disk):
    soon = timezone.now() + timedelta(minutes=5)
    for n in range(13):
        RunFactory(disk=disk, profile_name=f"fire {n}", not_before=soon + timedelta(seconds=n))
    page = owner_client.get("/overview/").content.decode()
    assert "fire 9" in page and "fire 10" not in page and "and 3 more waiting" in page


def test_an_empty_overview_says_what_to_do_next(owner_client, team):
    assert "Register a host" in owner_client.get("/overview/").content.decode()


def test_the_overview_makes_the_same_number_of_queries_for_many_disks(owner_client, host, disk):
    _finished_run(disk, profile_name="p", iops=1, limit=2)
    owner_client.get("/overview/")
    cache.clear()  # both views draw the Disks table afresh (jobs/results/page_cache.py)
    with CaptureQueriesContext(connection) as few:
        owner_client.get("/overview/")
    for n in range(12):
        more = Disk.objects.create(host=host, label=f"d{n}", target_path=f"/d{n}", spec_iops=100)
        _finished_run(more, profile_name="p", iops=50, limit=100)
    cache.clear()
    with CaptureQueriesContext(connection) as many:
        owner_client.get("/overview/")
    assert len(many) == len(few)


def test_the_overview_shows_a_page_of_disks_and_the_first_running_runs_of_a_large_team(owner_client, host, disk):
    """A fleet's overview stays one bounded page: 100 disks a page with links to the others, and the 20 longest
    running runs with the number of the others linking to them (each listed run polls its progress)."""
    disks = Disk.objects.bulk_create(
        Disk(host=host, team=host.team, label=f"d{n:03}", target_path=f"/d{n:03}", spec_iops=100) for n in range(149)
    )
    now = timezone.now()
    Run.objects.bulk_create(
        Run(disk=d, team=host.team, profile_name="p", state=Run.State.RUNNING, started_at=now - timedelta(minutes=n),
            progress={"elapsed_s": 5, "expected_s": 60})
        for n, d in enumerate(disks[:25])
    )  # fmt: skip
    first = owner_client.get("/overview/").content.decode()
    assert first.count('<th scope="row"><a href="/disks/') == overview.DISKS_PER_PAGE
    assert "1–100 of 150, by host" in first and 'href="?page=2#disks" rel="next"' in first and 'rel="prev"' not in first
    assert first.count('class="live-run"') == overview.ACTIVE_SHOWN
    assert "5 more running or starting</a>" in first and "state=running" in first
    # The longest running first: the run started 24 minutes ago is listed, the newest five are not.
    running = first.split("Running now")[1].split('id="active-more"')[0]
    assert f"on {disks[24]}\n" in running and f"on {disks[5]}\n" in running and f"on {disks[4]}\n" not in running
    second = owner_client.get("/overview/?page=2").content.decode()
    assert second.count('<th scope="row"><a href="/disks/') == 50 and "101–150 of 150" in second
    assert 'href="?page=1#disks" rel="prev"' in second and 'rel="next"' not in second
    # A page past the last, or not a number, shows the nearest there is.
    assert "101–150 of 150" in owner_client.get("/overview/?page=9").content.decode()
    assert "1–100 of 150" in owner_client.get("/overview/?page=x").content.decode()


# ----------------------------------------------------------------------------------------- who may see and change


def test_another_team_gets_404_on_every_page_with_an_id(rival_client, host, disk, team):
    profile = Profile.objects.create(team=team, name="ours")
    run = _finished_run(disk, profile_name="ours", iops=1, limit=2)
    other = _finished_run(disk, profile_name="ours", iops=1, limit=2)
    pages = [
        f"/hosts/{host.pk}/edit/",
        f"/hosts/{host.pk}/test/",
        f"/hosts/{host.pk}/disks/new/",
        f"/disks/{disk.pk}/edit/",
        f"/profiles/{profile.pk}/",
        f"/profiles/{profile.pk}/edit/",
        f"/compare/?disks={disk.pk},{disk.pk + 1000}",
        f"/compare/?runs={run.pk},{other.pk}",
    ]
    for url in pages:
        assert rival_client.get(url).status_code == 404, url
    for url in [*pages[:6], f"/profiles/{profile.pk}/copy/"]:
        assert rival_client.post(url, host_form_data() | _disk_data() | _profile_data()).status_code == 404, url
    saved = rival_client.post(
        "/import/",
        {
            "step": "save",
            "disk": disk.pk,
            "tool": "auto",
            "source_name": "x",
            "source_text": (FIXTURES / "fio-3.33-randrw.json").read_text(),
        },
    )
    assert saved.status_code == 200 and "Select a valid choice" in saved.content.decode()
    assert Run.objects.count() == 2 and Profile.objects.filter(team__isnull=False).count() == 1
    assert Host.objects.get(pk=host.pk).address == "127.0.0.1"


def test_viewers_may_look_but_every_post_is_refused(viewer_client, host, disk, team):
    profile = Profile.objects.create(team=team, name="ours")
    preset = Profile.objects.filter(builtin=True).first()
    for url in [
        "/overview/",
        "/hosts/",
        f"/hosts/{host.pk}/edit/",
        f"/hosts/{host.pk}/test/",
        "/profiles/",
        f"/profiles/{profile.pk}/",
        f"/disks/{disk.pk}/edit/",
        "/import/",
        "/compare/",
    ]:
        assert viewer_client.get(url).status_code == 200, url
    posts = {
        "/hosts/new/": host_form_data(private_key=BAD_KEY),
        f"/hosts/{host.pk}/edit/": host_form_data(name="renamed"),
        f"/hosts/{host.pk}/test/": {},
        f"/hosts/{host.pk}/disks/new/": _disk_data(),
        f"/disks/{disk.pk}/edit/": _disk_data(label="renamed"),
        "/profiles/new/": _profile_data(),
        f"/profiles/{profile.pk}/edit/": _profile_data(name="renamed"),
        f"/profiles/{preset.pk}/copy/": {},
        "/import/": {"step": "preview", "disk": disk.pk, "text": "x"},
    }
    for url, data in posts.items():
        assert viewer_client.post(url, data).status_code == 403, url
    save = {
        "step": "save",
        "disk": disk.pk,
        "tool": "auto",
        "source_name": "x",
        "source_text": (FIXTURES / "fio-3.33-randrw.json").read_text(),
    }
    assert viewer_client.post("/import/", save).status_code == 403
    assert list(Host.objects.values_list("name", flat=True)) == ["vm1"]
    assert list(Disk.objects.values_list("label", flat=True)) == ["data"]
    assert list(Profile.objects.filter(team=team).values_list("name", flat=True)) == ["ours"]
    assert not Run.objects.exists()


def test_the_viewer_sees_why_the_save_button_is_off(viewer_client, host):
    page = viewer_client.get(f"/hosts/{host.pk}/edit/").content.decode()
    assert "You are a viewer in this team" in page and "disabled" in page


def test_chart_data_on_the_compare_page_is_json_not_script(owner_client, host, disk):
    other = Disk.objects.create(host=host, label="x</script>", target_path="/x", spec_iops=10)
    _finished_run(disk, profile_name="p</script>", iops=1, limit=2)
    _finished_run(other, profile_name="p</script>", iops=1, limit=2)
    page = owner_client.get(f"/compare/?disks={disk.pk},{other.pk}").content.decode()
    blob = re.search(r'<script id="compare-data" type="application/json">(.*?)</script>', page, re.S)[1]
    assert json.loads(blob)["labels"] == ["p</script>"]


# ----------------------------------------------------------------------------------------- in a real browser

CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:"


def _strict_browser(page, live_server, user: User) -> None:
    """Log in by session cookie and serve every page with a CSP that forbids inline scripts and styles."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    page.context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])

    def with_csp(route):
        if route.request.resource_type != "document":
            return route.continue_()
        response = route.fetch()
        route.fulfill(response=response, headers=response.headers | {"content-security-policy": CSP})

    page.route(f"{live_server.url}/**", with_csp)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_forms_preview_live_and_the_compare_chart_draws_under_a_strict_csp(page, live_server, screenshot):
    owner = User.objects.create_user("olga", password="a-long-test-password-1")
    from jobs.teams import membership as teams

    team = teams.place_new_user(owner).team
    host = Host.objects.create(team=team, name="vm1", address="10.0.0.1", username="bench")
    disks = [Disk.objects.create(host=host, label=f"d{n}", target_path=f"/d{n}", spec_iops=4000) for n in (1, 2)]
    for n, disk in enumerate(disks, start=1):
        _finished_run(disk, profile_name="4k randread", iops=1000 * n, limit=4000)
    _strict_browser(page, live_server, owner)

    page.goto(f"{live_server.url}/hosts/{host.pk}/disks/new/")
    page.get_by_label("Disk type").select_option("alibaba-ultra")
    page.get_by_label("Size").fill("400")
    page.get_by_label("Stripes").fill("8")
    page.locator("#limits-preview").get_by_text("40,000 IOPS").wait_for()
    assert page.get_by_role("spinbutton", name="Throughput (MB/s):", exact=True).is_visible()

    page.goto(f"{live_server.url}/profiles/new/")
    page.get_by_label("Access pattern (fio rw)").select_option("randwrite")
    page.get_by_label("File size per job").fill("1G")
    page.locator("#command-preview").get_by_text("rw=randwrite", exact=False).wait_for()
    assert page.get_by_label("Reads (%)").is_hidden()
    page.get_by_label("Tool").select_option("ndisk64")
    page.get_by_label("Jobs / processes").fill("4")
    page.locator("#command-preview").filter(has_text=re.compile(r"^ndisk64 -R -r 50 -M 4 ")).wait_for()
    screenshot("profile-form")

    page.goto(f"{live_server.url}/compare/?disks={disks[0].pk},{disks[1].pk}")
    # wait_for_function evaluates a string, which the CSP forbids; evaluate goes through the DevTools protocol.
    drawn = "() => Chart.getChart(document.getElementById('compare-chart'))?.data.datasets.length"
    page.locator("#compare-chart").wait_for()
    for _ in range(50):
        if page.evaluate(drawn) == 4:
            break
        page.wait_for_timeout(100)
    assert page.evaluate(drawn) == 4
    screenshot("compare")
    assert page.js_errors == []


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_ticking_two_runs_on_the_compare_page_shows_their_environment_older_to_newer(
    screen, owner, disk, request, live_server, screenshot
):
    older, newer = _runs_on_two_kernels(disk)
    page = request.getfixturevalue(screen)
    _strict_browser(page, live_server, owner)
    page.goto(f"{live_server.url}/compare/")
    settle(page)
    for run in (newer, older):  # as listed: newest first
        page.locator(f"#pick-runs ~ fieldset input[value='{run.pk}']").check()
    page.get_by_role("button", name="Compare runs").click()
    page.wait_for_url("**runs=**")
    settle(page)
    changes = page.locator("#environment-changes li")
    assert changes.inner_text() == f"#{older.pk} → #{newer.pk}: kernel 5.10.0-21-amd64 → 6.1.0-13-amd64"
    shot = screenshot("environment", on=page)
    page.locator("#environment-changes").screenshot(path=str(shot.with_name(f"{shot.stem}-card.png")))
    assert_fits(page, "compare")
    assert not page.js_errors


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_saving_a_block_larger_than_the_file_shows_the_fix_under_the_block_size(
    screen, owner, team, request, live_server, screenshot
):
    page = request.getfixturevalue(screen)
    _strict_browser(page, live_server, owner)
    page.goto(f"{live_server.url}/profiles/new/")
    page.get_by_label("Name").fill("too big a block")
    page.get_by_label("Block size").fill("3G")
    page.get_by_label("File size per job").fill("128M")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state()
    row = page.locator("#row-block_size_bytes")
    assert BLOCK_OVER_FILE in row.inner_text()
    assert "Make the block size at most 128 MiB, or the file size per job at least 3 GiB." in row.inner_text()
    assert page.get_by_label("Block size").input_value() == "3G"
    row.scroll_into_view_if_needed()
    shot = screenshot("profile-refused", on=page)
    row.screenshot(path=str(shot.with_name(f"{shot.stem}-field.png")))
    assert_fits(page, "profile form")
    assert not Profile.objects.filter(team=team).exists()
    assert not page.js_errors
