"""Several outputs imported as sweeps: each output's point read from its own parameters, one sweep a rw, all
stored or none (jobs/imports/sweeps.py), through the use case, the API and the page."""

from __future__ import annotations

import html
import itertools
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobs.imports import importing, sweeps
from jobs.imports.forms import split_outputs
from jobs.models import Run, RunResult, RunSet
from jobs.sets import summary

FIXTURES = Path(__file__).parent.parent / "fixtures"
SWEEP = FIXTURES / "sweeps"  # real fio 3.33 on this machine: randread 4k/64k x QD 64/128 (JSON), randwrite 4k (text)
ULTRA_SHAPE = [
    "randwrite-4k-qd128.txt", "randread-64k-qd64.json", "randread-4k-qd128.json", "randwrite-4k-qd64.txt",
    "randread-64k-qd128.json", "randread-4k-qd64.json",
]  # fmt: skip
NDISK = ["ndisk_4proc_random_direct.txt", "ndisk_1proc_random_direct_derived.txt",
         "ndisk_2proc_random_direct_derived.txt"]  # fmt: skip
AT = datetime(2026, 5, 1, 2, 30, tzinfo=UTC)


def _sources(*names: str, folder: Path = SWEEP) -> list[tuple[str, str]]:
    return [(name, (folder / name).read_text()) for name in names]


def _refusal(disk, sources) -> str:
    with pytest.raises(sweeps.SweepImportRefused) as refused:
        sweeps.import_sweeps(disk, sources, at=AT)
    assert not RunSet.objects.exists() and not Run.objects.exists()  # nothing stored
    return str(refused.value)


def test_six_fio_outputs_of_the_ultra_shape_are_a_randread_grid_and_a_randwrite_qd_sweep_read_from_the_outputs(disk):
    writes, reads = sweeps.import_sweeps(disk, _sources(*ULTRA_SHAPE), at=AT)  # in the order of their first output

    assert reads.kind == RunSet.Kind.SWEEP and reads.trigger == Run.Trigger.IMPORT
    assert reads.state == RunSet.State.SUCCEEDED
    assert reads.explanation == "imported from 4 outputs; finished: 4 of 4 points succeeded"
    assert reads.plan["axes"] == [{"field": "block_size_bytes", "values": [4096, 65536]},
                                  {"field": "iodepth", "values": [64, 128]}]  # fmt: skip
    assert reads.profile_name == "randread: block size 4k,64k × iodepth 64,128"
    members = list(reads.members.order_by("set_index"))
    assert [m.parameters["source"] for m in members] == [
        "randread-4k-qd64.json", "randread-4k-qd128.json", "randread-64k-qd64.json", "randread-64k-qd128.json"
    ]  # fmt: skip
    for member, point in zip(members, reads.plan["points"], strict=True):
        assert member.set_point == point and member.state == Run.State.SUCCEEDED
        assert member.trigger == Run.Trigger.IMPORT
        assert member.raw_output == (SWEEP / member.parameters["source"]).read_text()
        # The point is what fio itself says it ran.
        assert member.summary["workload"]["iodepth"] == point["iodepth"]
        assert member.summary["block_size_bytes"] == point["block_size_bytes"]
    assert reads.base_parameters | {"runtime_s": None} == {
        "tool": "fio", "rw": "randread", "block_size_bytes": 4096, "iodepth": 64, "jobs": 1, "read_percent": 100,
        "runtime_s": None, "direct": False, "ioengine": "libaio", "format": "fio-json", "source": "import",
    }  # fmt: skip
    # The last point ends at the date given, each earlier one when the next one starts.
    assert members[-1].finished_at == AT
    assert all(a.finished_at == b.started_at for a, b in itertools.pairwise(members))
    assert (reads.started_at, reads.finished_at) == (members[0].started_at, AT)
    result = reads.result
    assert [p["run"] for p in result["points"]] == [m.pk for m in members]
    stored = [pytest.approx(m.summary["total"]["iops"], rel=1e-4) for m in members]
    assert [p["iops"] for p in result["points"]] == stored
    assert result["axis"] == "iodepth"
    assert [c["label"] for c in result["curves"]] == ["block size 4k", "block size 64k"]
    # Members are charted in their set, not as the disk's runs; each curve's knee is the disk's series, as a sweep's.
    knees = summary.knee_series(reads.profile_name, result) + summary.knee_series(writes.profile_name, writes.result)
    assert sorted(RunResult.objects.values_list("run_id", "profile_name")) == sorted(knees)

    assert writes.plan["axes"] == [{"field": "iodepth", "values": [64, 128]}]
    assert [m.parameters["format"] for m in writes.members.order_by("set_index")] == ["fio-text", "fio-text"]
    assert [m.set_point for m in writes.members.order_by("set_index")] == [{"iodepth": 64}, {"iodepth": 128}]
    assert writes.result["curves"][0]["label"] == "" and writes.result["axis"] == "iodepth"


def test_three_ndisk64_reports_are_a_process_sweep_of_1_2_and_4(disk):
    (run_set,) = sweeps.import_sweeps(disk, _sources(*NDISK, folder=FIXTURES), at=AT)

    assert run_set.plan["axes"] == [{"field": "jobs", "values": [1, 2, 4]}]
    assert run_set.profile_name == "ndisk64 random: processes (-M) 1-4 x2"
    assert run_set.base_parameters["pattern"] == "random" and "iodepth" not in run_set.base_parameters
    points = run_set.result["points"]
    assert [p["point"] for p in points] == [{"jobs": 1}, {"jobs": 2}, {"jobs": 4}]
    assert [p["iops"] for p in points] == [pytest.approx(5013.3), pytest.approx(10020.5), pytest.approx(20030.0)]
    assert run_set.result["axis"] == "jobs"
    assert run_set.result["curves"][0]["knee_text"].startswith(("knee at processes ", "no knee"))


def test_an_output_that_does_not_state_a_field_is_refused_naming_it_and_the_field_and_nothing_is_stored(disk):
    terse = ("fio-3.33-randrw.terse", (FIXTURES / "fio-3.33-randrw.terse").read_text())
    message = _refusal(disk, [*_sources(*ULTRA_SHAPE), terse])
    assert message.startswith("output 7 (fio-3.33-randrw.terse): its rw is not stated in the output")
    assert "terse lines state no job options" in message

    text_randrw = [(f"randrw {n}.txt", (FIXTURES / name).read_text())
                   for n, name in enumerate(["fio-3.33-randrw.txt", "fio-2.15-randrw.txt"], 1)]  # fmt: skip
    message = _refusal(disk, text_randrw)
    assert message.startswith("output 1 (randrw 1.txt): its read share is not stated in the output")


def test_outputs_that_do_not_fill_the_grid_or_stand_alone_or_meet_at_one_point_are_refused_naming_them(disk):
    message = _refusal(disk, _sources(*ULTRA_SHAPE[1:3], ULTRA_SHAPE[4]))
    assert message.startswith("The outputs of rw=randread (1, 2 and 3) make 3 of the 4 points of block size 4k,64k")
    assert "missing: block size 4k, iodepth 64." in message

    message = _refusal(disk, _sources("randread-4k-qd64.json", "randread-4k-qd128.json", "randwrite-4k-qd64.txt"))
    assert message.startswith("output 3 (randwrite-4k-qd64.txt) is the only output of rw=randwrite. rw is not an axis")

    again = importing.normalised((SWEEP / "randread-4k-qd64.json").read_text()) + "\n\n"  # the same output, pasted
    message = _refusal(disk, [*_sources("randread-4k-qd64.json", "randread-4k-qd128.json"), ("pasted", again)])
    assert message == "output 3 (pasted) is the same output as output 1 (randread-4k-qd64.json); give each once."


def test_outputs_differing_in_three_fields_are_refused_naming_the_fields(disk):
    sources = _sources(*ULTRA_SHAPE[1:3], ULTRA_SHAPE[4], ULTRA_SHAPE[5])
    name, text = sources[0]
    # Derived from the real output: its job options say numjobs=2, as if it had run two jobs.
    sources[0] = (name, text.replace('"iodepth" : "64"', '"iodepth" : "64",\n        "numjobs" : "2"', 1))
    message = _refusal(disk, sources)
    assert "differ in 3 fields (block size, numjobs, iodepth); a sweep varies at most 2." in message


def test_an_output_already_stored_on_the_disk_is_refused_naming_the_run_and_nothing_is_stored(disk):
    single = importing.import_result(disk, (SWEEP / "randread-4k-qd128.json").read_text(), name="earlier", at=AT)
    with pytest.raises(sweeps.SweepImportRefused) as refused:
        sweeps.import_sweeps(disk, _sources("randread-4k-qd64.json", "randread-4k-qd128.json"), at=AT)
    assert str(refused.value).startswith(
        f"output 2 (randread-4k-qd128.json) is already stored on {disk} as run {single.pk}; nothing was stored."
    )
    assert list(Run.objects.all()) == [single] and not RunSet.objects.exists()


def test_a_job_error_or_several_results_in_one_output_is_refused(disk):
    enospc = ("enospc.json", (FIXTURES / "fio-3.33-enospc.json").read_text())
    message = _refusal(disk, [*_sources("randread-4k-qd64.json"), enospc])
    assert message.startswith("output 2 (enospc.json) reports a job error (28)")
    groups = ("groups.txt", (FIXTURES / "real/fio-3.33-two-write-groups.txt").read_text())
    message = _refusal(disk, [groups, *_sources("randread-4k-qd64.json")])
    assert message.startswith("output 1 (groups.txt) holds 2 results")


def test_pasted_outputs_are_split_at_lines_of_four_hyphens():
    first, second = (SWEEP / "randwrite-4k-qd64.txt").read_text(), (SWEEP / "randread-4k-qd64.json").read_text()
    pasted = f"\r\n{first}\r\n----\r\n\r\n{second}\n------  \n\n"
    assert split_outputs(pasted) == [first.strip("\n"), second.strip("\n")]


# ------------------------------------------------------------------ the API


def test_the_api_imports_the_outputs_as_sweeps_and_answers_their_ids_and_pages(owner_client, disk):
    outputs = [{"name": name, "text": text} for name, text in _sources(*ULTRA_SHAPE)]
    body = {"disk": disk.pk, "outputs": outputs, "finished_at": AT.isoformat()}
    dry = owner_client.post("/api/v1/import/sweep/", body | {"dry_run": True}, content_type="application/json")
    assert dry.status_code == 200, dry.content
    assert [s["id"] for s in dry.json()["sets"]] == [None, None] and not RunSet.objects.exists()

    made = owner_client.post("/api/v1/import/sweep/", body, content_type="application/json")
    assert made.status_code == 201, made.content
    writes, reads = made.json()["sets"]
    run_set = RunSet.objects.get(pk=reads["id"])
    assert reads["url"] == f"http://testserver/sets/{run_set.pk}/" and reads["rw"] == "randread"
    assert reads["axes"] == [{"field": "block_size_bytes", "values": [4096, 65536]},
                             {"field": "iodepth", "values": [64, 128]}]  # fmt: skip
    assert reads["points"][0] == {"point": {"block_size_bytes": 4096, "iodepth": 64},
                                  "output": "output 6 (randread-4k-qd64.json)",
                                  "run": run_set.members.get(set_index=0).pk}  # fmt: skip
    assert writes["points"][1]["output"] == "output 1 (randwrite-4k-qd128.txt)"

    again = owner_client.post("/api/v1/import/sweep/", body, content_type="application/json")
    assert again.status_code == 400
    assert again.json()["outputs"][0].startswith("output 1 (randwrite-4k-qd128.txt) is already stored on")
    assert RunSet.objects.count() == 2


def test_the_api_takes_uploaded_files_and_refuses_naming_the_output_and_field(owner_client, disk):
    files = [open(FIXTURES / name, "rb") for name in NDISK]  # closed below
    try:
        made = owner_client.post("/api/v1/import/sweep/", {"disk": disk.pk, "files": files})
    finally:
        for file in files:
            file.close()
    assert made.status_code == 201, made.content
    assert [p["point"]["jobs"] for p in made.json()["sets"][0]["points"]] == [1, 2, 4]
    terse = {"name": "t", "text": (FIXTURES / "fio-3.33-randrw.terse").read_text()}
    refused = owner_client.post("/api/v1/import/sweep/", {"disk": disk.pk, "outputs": [terse, terse]},
                                content_type="application/json")  # fmt: skip
    assert refused.status_code == 400 and refused.json()["outputs"][0].startswith("output 1 (t): its rw is not stated")


def test_the_schema_documents_the_sweep_import(owner_client):
    schema = owner_client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/import/sweep/"]["post"]
    assert set(operation["responses"]) >= {"200", "201", "409"}
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/SweepImportRequest")
    fields = schema["components"]["schemas"]["SweepImportRequest"]["properties"]
    assert {"disk", "outputs", "files", "dry_run"} <= set(fields)


# ------------------------------------------------------------------ the page


def test_a_person_pastes_the_outputs_checks_the_sweeps_then_saves_and_is_sent_to_the_set(owner_client, disk):
    pasted = "\n----\n".join(text for _, text in _sources(*NDISK, folder=FIXTURES))
    preview = owner_client.post("/import/sweep/", {"step": "preview", "disk": disk.pk, "tool": "auto",
                                                   "finished_at": "", "text": pasted})  # fmt: skip
    page = html.unescape(preview.content.decode())
    assert preview.status_code == 200 and "ndisk64 random: processes (-M) 1-4 x2" in page
    assert "output 2 (pasted output 2)" in page and "Save 1 sweep" in page and not RunSet.objects.exists()

    form = page[page.index('id="sweep-confirm"') :]
    form = form[: form.index("</form>")]
    data = dict(re.findall(r'<input type="hidden" name="(step|disk|finished_at|tool)" value="([^"]*)"', form))
    data["source_name"] = re.findall(r'<input type="hidden" name="source_name" value="([^"]*)"', form)
    data["source_text"] = [t.removeprefix("\n") for t in re.findall(r"<textarea[^>]*>(.*?)</textarea>", form, re.S)]
    saved = owner_client.post("/import/sweep/", data)
    assert saved.status_code == 302, html.unescape(saved.content.decode())[-3000:]
    run_set = RunSet.objects.get()
    assert saved.status_code == 302 and saved["Location"] == f"/sets/{run_set.pk}/"
    assert [m.set_point["jobs"] for m in run_set.members.order_by("set_index")] == [1, 2, 4]
    assert abs(run_set.finished_at - datetime.now(UTC)) < timedelta(minutes=1)


def test_the_page_says_why_outputs_make_no_sweep_and_stores_nothing(owner_client, disk):
    pasted = "\n----\n".join(text for _, text in _sources("randread-4k-qd64.json", "randwrite-4k-qd64.txt"))
    response = owner_client.post("/import/sweep/", {"step": "preview", "disk": disk.pk, "tool": "auto",
                                                    "finished_at": "", "text": pasted})  # fmt: skip
    page = html.unescape(response.content.decode())
    assert "Nothing was stored: output 1 (pasted output 1) is the only output of rw=randread." in page
    assert "sweep-confirm" not in page
    one = owner_client.post("/import/sweep/", {"step": "preview", "disk": disk.pk, "tool": "auto",
                                               "finished_at": "", "text": "x"})  # fmt: skip
    assert "Give at least two outputs" in html.unescape(one.content.decode())
