from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from jobs.imports import importing
from jobs.models import Run

FIXTURES = Path(__file__).parent / "fixtures"


def _import(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_results", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_a_dry_run_prints_the_canonical_summaries_in_argument_order():
    files = [FIXTURES / "fio-3.33-randrw.json", FIXTURES / "ndisk_4proc_random_direct.txt",
             FIXTURES / "fio-3.33-randrw.txt"]  # fmt: skip
    code, out, _ = _import(*map(str, files), "--dry-run", "--json")
    assert code == 0
    summaries = json.loads(out)
    assert [s["tool"] for s in summaries] == ["fio", "ndisk64", "fio"]
    assert summaries[1]["total"]["iops"] == pytest.approx(20030.0)
    assert summaries[1]["total"]["bw_bytes_per_s"] == pytest.approx(80119.94 * 1024)
    assert summaries[0]["read"]["iops"] > 0 and summaries[0]["write"]["iops"] > 0
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_an_unreadable_file_exits_2_with_its_reason_and_the_others_are_still_processed(tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("this is a shopping list, not fio output\n")
    code, out, err = _import(str(junk), str(FIXTURES / "fio-3.33-randrw.json"), str(tmp_path / "missing.json"),
                             "--dry-run", "--json")  # fmt: skip
    assert code == 2
    summaries = json.loads(out)
    assert summaries[0] is None and summaries[2] is None
    assert summaries[1]["tool"] == "fio"
    assert "notes.txt: not imported: This is not output benchweb can read" in err
    assert "missing.json: not imported" in err


def test_importing_onto_a_disk_stores_finished_runs_with_raw_text_and_samples(disk):
    stream = FIXTURES / "fio-3.33-randrw-status-interval.json"
    code, out, err = _import(str(stream), str(FIXTURES / "ndisk_4proc_random_direct.txt"), "--disk", str(disk.pk),
                             "--at", "2026-05-01T02:30:00Z")  # fmt: skip
    assert code == 0, err
    fio_run, ndisk_run = Run.objects.order_by("pk")
    assert fio_run.trigger == ndisk_run.trigger == Run.Trigger.IMPORT
    assert fio_run.state == Run.State.SUCCEEDED
    assert fio_run.raw_output == stream.read_text()
    assert fio_run.samples.count() >= 2 and "samples" not in fio_run.summary  # kept once, as RunSample rows
    assert fio_run.finished_at.isoformat() == "2026-05-01T02:30:00+00:00"
    assert ndisk_run.summary["total"]["iops"] == pytest.approx(20030.0)
    assert f"stored as run {fio_run.pk}" in out


def test_an_imported_fio_job_error_is_stored_as_a_failed_run(disk):
    code, _, _ = _import(str(FIXTURES / "fio-3.33-enospc.json"), "--disk", str(disk.pk))
    assert code == 0
    run = Run.objects.get()
    assert run.state == Run.State.FAILED
    assert "error 28" in run.explanation


def test_a_bad_date_names_the_option_and_shows_an_example(disk):
    with pytest.raises(CommandError, match=r"--at 'yesterday' is not an ISO 8601 date-time; e\.g\. 2026"):
        _import(str(FIXTURES / "fio-3.33-randrw.json"), "--disk", str(disk.pk), "--at", "yesterday")
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_an_unknown_disk_is_refused():
    with pytest.raises(CommandError, match="--disk 999: no such disk"):
        _import(str(FIXTURES / "fio-3.33-randrw.json"), "--disk", "999")


@pytest.mark.django_db
def test_forcing_the_wrong_tool_says_what_the_file_looks_like():
    code, _, err = _import(str(FIXTURES / "ndisk_4proc_random_direct.txt"), "--dry-run", "--tool", "fio")
    assert code == 2
    assert "looks like ndisk64 output" in err


def test_an_imported_json_plus_file_keeps_its_latency_histogram(owner_client, disk):
    text = (FIXTURES / "fio-3.33-randread-jsonplus.json").read_text()
    run = importing.import_result(disk, text, name="jsonplus")
    bins = run.summary["latency_bins_ns"]["read"]
    assert bins and all(int(ns) > 0 and n > 0 for ns, n in bins.items())
    histogram = owner_client.get(f"/runs/{run.pk}/series.json").json()["histogram"]
    assert histogram["read"]["total"] == sum(bins.values()) == sum(histogram["read"]["counts"])


def test_a_file_with_a_number_beyond_any_disk_is_reported_with_its_field_and_the_next_file_is_still_parsed(tmp_path):
    damaged = tmp_path / "damaged.json"
    doc = json.loads((FIXTURES / "fio-3.33-randrw.json").read_text())
    doc["jobs"][0]["read"]["runtime"] = doc["jobs"][0]["write"]["runtime"] = 18446744073709551615
    damaged.write_text(json.dumps(doc))
    code, out, err = _import(str(damaged), str(FIXTURES / "ndisk_4proc_random_direct.txt"), "--dry-run", "--json")
    assert code == 2
    summaries = json.loads(out)
    assert summaries[0] is None and summaries[1]["tool"] == "ndisk64"
    assert "damaged.json: not imported: runtime_s = 18446744073709552 is beyond any real run (at most" in err
    assert "1 of 2 file(s) parsed, 1 failed" in err  # the tally goes to stderr so stdout stays JSON


def test_a_damaged_file_between_two_good_ones_leaves_both_good_ones_stored(disk, tmp_path):
    damaged = tmp_path / "damaged.txt"
    text = (FIXTURES / "ndisk_4proc_random_direct.txt").read_text()
    damaged.write_text(text.replace("80119.94", "18446744073709551615.00", 1))
    good = [FIXTURES / "fio-3.33-randrw.json", FIXTURES / "fio-3.33-randrw.terse"]
    code, out, err = _import(str(good[0]), str(damaged), str(good[1]), "--disk", str(disk.pk))
    assert code == 2
    assert "damaged.txt: not imported: total.bw_bytes_per_s = " in err
    assert [run.raw_output for run in Run.objects.order_by("pk")] == [path.read_text() for path in good]
    assert "2 of 3 file(s) imported, 1 failed" in out
