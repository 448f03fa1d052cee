"""fio --client output imported as a synchronised group: one member a client on the disk chosen for it or matched
by its host name, fio's "All clients" total kept beside benchweb's, refused whole storing nothing
(jobs/imports/groups.py), through the use case, the API and the page."""

from __future__ import annotations

import html
import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.imports import groups
from jobs.models import Disk, Host, Run, RunSet
from tests.builders import QUICK_RATE_IOPS
from tests.stacks import free_port

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"  # fio 3.33 on loopback servers (README.md there)
AT = datetime(2026, 11, 29, 6, 5, tzinfo=UTC)


def _text(name: str) -> str:
    return (CLIENTS / name).read_text()


@pytest.fixture
def second(team, credential) -> Disk:
    """A disk on a host addressed 127.0.0.2, the second loopback server of the fixtures."""
    host = Host.objects.create(team=team, name="vm2", address="127.0.0.2", username="bench", credential=credential)
    return Disk.objects.create(host=host, label="data", target_path="/data/bench")


@pytest.fixture
def third(team, credential) -> Disk:
    host = Host.objects.create(team=team, name="127.0.0.3", address="10.9.9.3", username="bench", credential=credential)
    return Disk.objects.create(host=host, label="data", target_path="/data/bench")


def _import(team, name: str, chosen=(), **kwargs) -> RunSet:
    return groups.import_group(groups.plan(team, name, _text(name), chosen), at=AT, **kwargs)


def _refusal(team, name: str, chosen=(), text: str | None = None) -> str:
    with pytest.raises(groups.GroupImportRefused) as refused:
        groups.import_group(groups.plan(team, name, text or _text(name), chosen), at=AT)
    assert not RunSet.objects.exists() and not Run.objects.exists()  # nothing stored
    return str(refused.value)


def test_two_clients_become_a_group_of_two_members_on_the_disks_their_host_names_match(team, disk, second):
    group = _import(team, "fio-3.33-two-clients.json")

    assert group.kind == RunSet.Kind.GROUP and group.trigger == Run.Trigger.IMPORT
    assert group.state == RunSet.State.SUCCEEDED
    assert group.profile_name == "randread 4k · 2 fio clients"  # fio states no iodepth it was not given
    assert group.plan["disks"] == [second.pk, disk.pk]  # fio printed 127.0.0.2 first
    first, other = group.members.order_by("set_index")
    assert (first.disk, other.disk) == (second, disk)
    assert first.parameters["label"] == "client 127.0.0.2" and first.trigger == Run.Trigger.IMPORT
    # Each member holds its client's numbers as fio printed them: 14159 I/Os in 1001 ms.
    assert first.summary["total"]["iops"] == pytest.approx(14144.855145, abs=1e-6)
    assert other.summary["total"]["iops"] == pytest.approx(14069.93007, abs=1e-6)
    assert first.summary["printed"]["read"]["iops"] == "14144.855145"
    result = group.result
    assert [c["client"] for c in result["clients"]] == ["client 1 (127.0.0.2)", "client 2 (127.0.0.1)"]
    assert all(c["matched_by_host"] for c in result["clients"])
    # benchweb's total (each client's own rate, added up) beside fio's own "All clients" entry.
    assert result["totals"]["whole_runs"]["iops"] == pytest.approx(28214.79, abs=0.01)
    assert result["fio_total"]["iops"] == pytest.approx(28214.785215, abs=1e-6)
    assert result["fio_total"]["printed"]["read"]["iops"] == "28214.785215"
    assert result["fio_total"]["why"] == "fio's “All clients” total and the sum of the clients agree."
    assert "agree" in group.explanation and group.explanation.startswith("imported from fio --client output")
    # What the import cannot know is empty, with the reason: fio prints no client's start.
    assert result["start_spread"]["spread_s"] is None and "start spread not known" in result["start_spread"]["text"]
    assert result["totals"]["span"]["iops"] is None and "not known" in result["totals"]["span"]["why"]
    assert "2026-11-29 06:04:56 UTC" in result["offsets"]  # fio's "timestamp", its client's clock when it began
    # Together, as fio's client started them; the longest client ends at the date given.
    assert first.started_at == other.started_at == group.started_at == AT - timedelta(seconds=1.001)
    assert group.finished_at == AT


def test_several_jobs_a_client_are_one_member_each_and_a_differing_fio_total_is_named(team, disk, second, third):
    group = _import(team, "fio-3.33-three-clients-two-jobs.json")

    members = list(group.members.order_by("set_index"))
    assert [m.disk for m in members] == [third, second, disk]  # 127.0.0.3 is the name of the third host
    # Client 127.0.0.3 ran jobs a and b: 17898 + 17696 reads and 7594 + 7664 writes, each in 2001 ms.
    assert members[0].summary["total"]["iops"] == pytest.approx((17898 + 17696 + 7594 + 7664) / 2.001, rel=1e-9)
    assert members[0].summary["processes"] == 2
    fio_total = group.result["fio_total"]
    assert fio_total["iops"] == pytest.approx(52387.643249 + 45087 / 2.007, rel=1e-6)
    assert fio_total["why"].startswith("fio's “All clients” total is 0.25 % below the sum of the clients")
    assert "longest client's runtime (2.007 s)" in fio_total["why"]
    assert "0.25 % below" in group.explanation


def test_without_fios_all_clients_total_benchweb_adds_the_clients_and_says_fio_printed_none(team, disk, second, third):
    group = _import(team, "derived-three-clients-no-all-clients.json")

    assert group.result["fio_total"]["iops"] is None
    assert "fio printed no “All clients” total (fio#1881" in group.result["fio_total"]["why"]
    assert group.result["totals"]["whole_runs"]["iops"] == pytest.approx(75039.28, abs=0.01)


def test_fio_3_43s_global_options_given_once_a_client_state_the_workload(team, disk, second):
    group = _import(team, "built-fio-3.43-two-clients.json")

    first = group.members.order_by("set_index").first()
    assert first.summary["workload"]["rw"] == "randread" and first.summary["block_size_bytes"] == 4096
    assert first.summary["tool_version"] == "3.43"
    assert group.base_parameters["rw"] == "randread" and group.base_parameters["clients"] == 2


def test_clients_without_host_names_take_the_disks_chosen_in_fios_order_and_say_so(team, disk, second):
    refused = _refusal(team, "derived-two-clients-no-host-names.json")
    assert refused.startswith("client 1 has no disk: none was chosen, and fio printed no host name for it.")

    group = _import(team, "derived-two-clients-no-host-names.json", [disk, second])

    assert [m.disk for m in group.members.order_by("set_index")] == [disk, second]
    assert any("fio#515" in note for note in group.result["notes"])
    assert not any(c["matched_by_host"] for c in group.result["clients"])


def test_the_text_report_is_imported_on_the_disks_chosen(team, disk, second):
    group = _import(team, "fio-3.33-two-clients.txt", [disk, second])

    first = group.members.order_by("set_index").first()
    assert first.parameters["format"] == "fio-text"
    assert first.summary["printed"]["read"]["iops"] == "18.2k"  # "read: IOPS=18.2k, BW=71.0MiB/s"
    assert group.result["fio_total"]["printed"]["read"]["iops"] == "36.4k"
    assert any("numbered in the order printed" in note for note in group.result["notes"])


def test_what_cannot_be_a_group_is_refused_naming_the_field_and_the_fix_and_nothing_is_stored(team, disk, second):
    once = _refusal(team, "fio-3.33-job-file-given-once.json")
    assert "holds 1 client; a group has 2 to 100 members" in once and "--client=b job.fio" in once

    single = (CLIENTS.parent / "fio-3.33-randrw.json").read_text()
    assert "is not the output of fio --client" in _refusal(team, "one.json", text=single)

    twice = _refusal(team, "fio-3.33-two-clients.json", [disk, disk])
    assert twice.startswith("Disk ") and "chosen for several clients" in twice

    with pytest.raises(groups.GroupImportRefused) as counted:
        groups.plan(team, "x", _text("fio-3.33-two-clients.json"), [disk])
    assert counted.value.field == "disks" and "1 disk was given for the 2 clients" in str(counted.value)


def test_a_client_with_a_job_error_or_clients_of_several_fio_groups_are_refused_naming_them(team, disk, second):
    # Derived here from the recorded output: its second client's job given errno 28, or each client's entry given
    # again as a second, stonewalled group.
    doc = json.loads(_text("fio-3.33-two-clients.json"))
    doc["client_stats"][1]["error"] = 28
    refused = _refusal(team, "failed.json", text=json.dumps(doc))
    assert refused.startswith("failed.json: client 2 (127.0.0.1) reports error 28 in job rr")
    assert "Import the output with Import results" in refused

    doc = json.loads(_text("fio-3.33-two-clients.json"))
    clients = [e for e in doc["client_stats"] if e["jobname"] != "All clients"]
    doc["client_stats"] = clients + [e | {"groupid": 1} for e in clients]
    refused = _refusal(team, "groups.json", text=json.dumps(doc))
    assert refused.startswith("groups.json: each client ran 2 fio groups (stonewall or new_group)")


def test_the_same_output_again_is_refused_naming_the_run_that_holds_it(team, disk, second):
    first = _import(team, "fio-3.33-two-clients.json")

    refused = _refusal_after(team, "fio-3.33-two-clients.json")
    member = first.members.order_by("set_index").first()
    assert f"is already stored on {member.disk} as run {member.pk}" in refused
    assert RunSet.objects.count() == 1


def _refusal_after(team, name: str) -> str:
    with pytest.raises(groups.GroupImportRefused) as refused:
        _import(team, name)
    return str(refused.value)


# ------------------------------------------------------------------ the API


def test_the_api_imports_the_output_as_a_group_and_answers_its_clients_and_both_totals(owner_client, disk, second):
    body = {"name": "clients.json", "text": _text("fio-3.33-two-clients.json"), "finished_at": AT.isoformat()}
    dry = owner_client.post("/api/v1/import/group/", body | {"dry_run": True}, content_type="application/json")
    assert dry.status_code == 200, dry.content
    assert dry.json()["id"] is None and dry.json()["refused"] is None and not RunSet.objects.exists()
    assert [(c["host"], c["disk"], c["matched_by_host"]) for c in dry.json()["clients"]] == [
        ("127.0.0.2", second.pk, True), ("127.0.0.1", disk.pk, True)
    ]  # fmt: skip

    made = owner_client.post("/api/v1/import/group/", body | {"disks": [disk.pk, second.pk]},
                             content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    answer = made.json()
    group = RunSet.objects.get(pk=answer["id"])
    assert answer["url"] == f"http://testserver/sets/{group.pk}/" and answer["name"] == group.profile_name
    assert [c["run"] for c in answer["clients"]] == list(
        group.members.order_by("set_index").values_list("pk", flat=True)
    )
    assert [c["disk"] for c in answer["clients"]] == [disk.pk, second.pk]  # the disks given win over the match
    assert answer["clients_sum"]["iops"] == pytest.approx(28214.785, abs=0.001)
    assert (
        answer["fio_total"]["iops"] == pytest.approx(28214.785215, abs=1e-6) and "agree" in answer["fio_total"]["why"]
    )

    again = owner_client.post("/api/v1/import/group/", body, content_type="application/json")
    assert again.status_code == 400 and "is already stored on" in again.json()["text"][0]
    assert RunSet.objects.count() == 1


def test_the_api_refuses_naming_the_field_and_stores_nothing(owner_client, disk, second):
    with open(CLIENTS / "fio-3.33-job-file-given-once.json", "rb") as file:
        once = owner_client.post("/api/v1/import/group/", {"file": file})
    assert once.status_code == 400 and "holds 1 client" in once.json()["text"][0]
    dry = owner_client.post("/api/v1/import/group/", {"text": _text("fio-3.33-two-clients.txt"), "dry_run": True},
                            content_type="application/json")  # fmt: skip
    assert dry.status_code == 200 and [c["disk"] for c in dry.json()["clients"]] == [None, None]
    assert dry.json()["refused"].startswith("client 1 has no disk: none was chosen, and fio printed no host name")
    body = {"text": _text("fio-3.33-two-clients.txt"), "disks": [disk.pk]}
    counted = owner_client.post("/api/v1/import/group/", body, content_type="application/json")
    assert counted.status_code == 400 and "1 disk was given for the 2 clients" in counted.json()["disks"][0]
    unmatched = owner_client.post("/api/v1/import/group/", body | {"disks": [disk.pk, None]},
                                  content_type="application/json")  # fmt: skip
    assert unmatched.status_code == 400
    assert unmatched.json()["disks"][0].startswith(
        "client 2 has no disk: none was chosen, and fio printed no host name"
    )
    assert not RunSet.objects.exists() and not Run.objects.exists()


def test_the_schema_documents_the_group_import(owner_client):
    schema = owner_client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/import/group/"]["post"]
    assert set(operation["responses"]) >= {"200", "201", "409"}
    fields = schema["components"]["schemas"]["GroupImportRequest"]["properties"]
    assert {"text", "file", "disks", "dry_run", "finished_at"} <= set(fields)


# ------------------------------------------------------------------ the page


def test_a_person_pastes_the_output_checks_the_clients_disks_then_saves_and_is_sent_to_the_group(
    owner_client, disk, second
):
    preview = owner_client.post("/import/group/", {"step": "preview", "tool": "auto", "finished_at": "",
                                                   "text": _text("fio-3.33-three-clients-two-jobs.json")})  # fmt: skip
    page = html.unescape(preview.content.decode())
    assert preview.status_code == 200 and "randrw 70/30 4k · 3 fio clients" in page
    assert "fio's “All clients” total is 0.25 % below the sum of the clients" in page
    # 127.0.0.3 names no host of the team: its select is left at "match by host name", and the page says so.
    assert "client 1 (127.0.0.3) has no disk" in page and not RunSet.objects.exists()
    selected = re.findall(r'<option value="(\d+)" selected>', page)
    assert selected == [str(second.pk), str(disk.pk)]

    form = page[page.index('id="group-confirm"') :]
    form = form[: form.index("</form>")]
    data = dict(re.findall(r'<input type="hidden" name="(step|finished_at|tool|source_name)" value="([^"]*)"', form))
    data["source_text"] = re.findall(r"<textarea[^>]*>(.*?)</textarea>", form, re.S)[0].removeprefix("\n")
    refused = owner_client.post("/import/group/", data | {"disk": ["", str(second.pk), str(disk.pk)]})
    assert "Nothing was stored: client 1 (127.0.0.3) has no disk" in html.unescape(refused.content.decode())
    third = Disk.objects.create(host=second.host, label="other", target_path="/data/other")

    saved = owner_client.post("/import/group/", data | {"disk": [str(third.pk), str(second.pk), str(disk.pk)]})
    group = RunSet.objects.get()
    assert saved.status_code == 302 and saved["Location"] == f"/sets/{group.pk}/"
    assert [m.disk for m in group.members.order_by("set_index")] == [third, second, disk]
    assert group.members.first().raw_output == _text("fio-3.33-three-clients-two-jobs.json")
    detail = html.unescape(owner_client.get(saved["Location"]).content.decode())
    assert "fio's own “All clients” total" in detail and "start spread not known" in detail


def test_the_page_says_why_an_output_is_no_group_and_stores_nothing(owner_client, disk):
    single = (CLIENTS.parent / "fio-3.33-randrw.json").read_text()
    response = owner_client.post("/import/group/", {"step": "preview", "tool": "auto", "finished_at": "",
                                                    "text": single})  # fmt: skip
    page = html.unescape(response.content.decode())
    assert "Nothing was stored: pasted text is not the output of fio --client" in page
    assert "group-confirm" not in page and not RunSet.objects.exists()


# ------------------------------------------------------------------ a real fio --client run


@contextmanager
def _fio_servers(count: int) -> Iterator[list[str]]:
    """`fio --server` on 127.0.0.1, 127.0.0.2, ... (loopback only), each on a free port; their --client values."""
    ports = [free_port() for _ in range(count)]
    servers = [
        subprocess.Popen(["fio", f"--server=ip:127.0.0.{n},{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for n, port in enumerate(ports, 1)
    ]
    try:
        for n, port in enumerate(ports, 1):
            _wait_listening(f"127.0.0.{n}", port)
        yield [f"ip:127.0.0.{n},{port}" for n, port in enumerate(ports, 1)]
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)


def _wait_listening(address: str, port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.slow
def test_a_real_fio_client_run_on_two_loopback_servers_is_imported_as_a_group(
    fio_installed, team, disk, second, tmp_path
):
    job = tmp_path / "job.fio"
    (tmp_path / "data").mkdir()
    job.write_text(f"[global]\nrw=randread\nbs=4k\nsize=4m\nruntime=1\ntime_based=1\nrate_iops={QUICK_RATE_IOPS}\n"
                   f"directory={tmp_path / 'data'}\n\n[quick]\n")  # fmt: skip
    with _fio_servers(2) as servers:
        command = ["fio", f"--client={servers[0]}", str(job), f"--client={servers[1]}", str(job)]
        ran = subprocess.run([*command, "--output-format=json"], capture_output=True, text=True, timeout=60, check=True)

    group = groups.import_group(groups.plan(team, "live.json", ran.stdout), at=AT)

    assert group.state == RunSet.State.SUCCEEDED and group.members.count() == 2
    stats = json.loads(ran.stdout[ran.stdout.index("{") :])["client_stats"]
    printed = {e["hostname"]: e for e in stats if e["jobname"] != "All clients"}
    for member in group.members.all():
        entry = printed[member.parameters["label"].removeprefix("client ")]
        assert member.disk == {"127.0.0.1": disk, "127.0.0.2": second}[entry["hostname"]]
        assert float(member.summary["printed"]["read"]["iops"]) == entry["read"]["iops"]  # as fio printed it
        assert 0 < member.summary["total"]["iops"] <= int(QUICK_RATE_IOPS) * 1.05
    (total,) = [e for e in stats if e["jobname"] == "All clients"]
    assert float(group.result["fio_total"]["printed"]["read"]["iops"]) == total["read"]["iops"]
    assert group.result["fio_total"]["why"]  # agreeing or not, it says which
