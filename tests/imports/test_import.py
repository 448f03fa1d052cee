from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from jobs import figures
from jobs.imports import importing
from jobs.models import Run
from tests.builders import rerun_of
from tests.factories import DiskFactory

FIXTURES = Path(__file__).parent.parent / "fixtures"


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


# ------------------------------------------------------------------ the figures shown first (jobs/figures.py)


def _figures(summary: dict) -> dict[str, dict]:
    return {row["direction"]: row for row in figures.result_figures(summary)}


def test_ndisk64s_figures_keep_its_digits_and_unit_with_the_converted_value_beside():
    summary = importing.parse_import((FIXTURES / "ndisk_4proc_random_direct.txt").read_text()).summary
    total = _figures(summary)["total"]
    assert (total["iops"], total["bw"], total["converted"]) == ("20,030.0 IO/s", "80,119.94 KB/s", "78.24 MiB/s")
    assert total["source"] == "printed"


def test_fio_texts_figures_are_its_own_tokens_and_the_total_it_did_not_print_says_so():
    summary = importing.parse_import((FIXTURES / "fio-3.33-randrw.txt").read_text()).summary
    rows = _figures(summary)
    assert (rows["read"]["iops"], rows["read"]["bw"], rows["read"]["bw_alt"]) == ("17.0k IOPS", "66.4MiB/s", "69.6MB/s")
    assert rows["write"]["iops"] == "7,295 IOPS" and rows["write"]["converted"] == ""  # printed in MiB/s already
    # fio printed no total: read + write, no more precise than its "17.0k"
    assert (rows["total"]["source"], rows["total"]["iops"], rows["total"]["bw"]) == ("sum", "24.3k IOPS", "94.9MiB/s")
    assert figures.printed_runtime(summary) == "3,001msec"


def test_fio_jsons_figures_keep_every_digit_it_wrote_and_its_total_is_summed_in_decimal():
    summary = importing.parse_import((FIXTURES / "fio-3.33-randrw.json").read_text()).summary
    rows = _figures(summary)
    assert (rows["read"]["iops"], rows["read"]["bw"], rows["read"]["converted"]) == (
        "19,448.517161 IOPS",
        "77,794 KiB/s",
        "75.97 MiB/s",
    )
    assert (rows["total"]["iops"], rows["total"]["bw"]) == ("27,756.081306 IOPS", "111,024 KiB/s")


def test_a_run_stored_before_printed_figures_shows_its_stored_numbers_in_full_never_abbreviated():
    stored = {"iops": 1506.0, "bw_bytes_per_s": 6169.0 * 1000}
    rows = _figures({"tool": "fio", "total": stored, "read": stored, "write": None})
    assert rows["read"]["iops"] == "1,506 IOPS" and "total" not in rows  # a one-direction total repeats it
    assert rows["read"]["bw"] == "5.88 MiB/s" and rows["read"]["source"] == "stored"
    assert _figures({"total": {"iops": 1506.502, "bw_bytes_per_s": 1.0}})["total"]["iops"] == "1,506.502 IOPS"


def test_printed_figures_gain_thousands_separators_only_where_the_tool_printed_none():
    assert figures.grouped("20030.0 IO/s") == "20,030.0 IO/s"
    assert figures.grouped("1506.502000") == "1,506.502000"
    assert figures.grouped("1,506 IOPS") == "1,506 IOPS"
    assert figures.grouped("23.4k") == "23.4k"
    assert figures.grouped("6169kB/s") == "6,169kB/s"


def test_the_workload_read_from_the_output_names_the_import():
    workload = {"rw": "randwrite", "block_size": "4k", "iodepth": 32, "numjobs": 4, "read_percent": 0.0}
    assert figures.workload_name(workload) == "randwrite 4k QD32 \N{MULTIPLICATION SIGN}4"
    assert figures.workload_name({"rw": "randread", "block_size": "4k", "iodepth": 1, "numjobs": 1}) == (
        "randread 4k QD1"
    )
    assert figures.workload_name({"rw": None, "block_size": None}) == ""
    facts = dict(figures.workload_facts({"workload": workload | {"ioengine": None}}))
    assert facts["Read %"] == "0 %" and facts["I/O engine"] == "not in the output"


# ------------------------------------------------------------------ duplicates, names and series


def test_the_same_output_on_the_same_disk_is_refused_naming_the_first_run(disk, host):
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()
    first = importing.import_result(disk, text, name="a.json")
    assert first.import_fingerprint == importing.fingerprint(text, "")
    for again in (text, text.replace("\n", "\r\n"), f"\n{text}\n\n"):
        with pytest.raises(importing.DuplicateImport, match=rf"already stored on .* as run {first.pk}") as refused:
            importing.import_result(disk, again, name="b.json")
        assert refused.value.first == first
    other = DiskFactory(host=host, label="other", target_path="/data/other")
    assert importing.import_result(other, text, name="a.json").disk == other  # another disk: its own result
    assert Run.objects.filter(disk=disk).count() == 1


def test_the_command_reports_a_duplicate_file_and_goes_on(disk):
    path = str(FIXTURES / "fio-3.33-randrw.json")
    _import(path, "--disk", str(disk.pk))
    code, out, err = _import(path, str(FIXTURES / "ndisk_4proc_random_direct.txt"), "--disk", str(disk.pk))
    assert code == 2
    first = Run.objects.order_by("pk").first()
    assert f"fio-3.33-randrw.json: not imported: This output is already stored on {disk} as run {first.pk}" in err
    assert Run.objects.count() == 2 and "1 of 2 file(s) imported, 1 failed" in out


def test_imports_are_named_by_their_workload_and_one_workload_is_one_series(owner_client, disk):
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()  # rw=randrw rwmixread=70 bs=4096, no iodepth given
    first = importing.import_result(disk, text, name="a.json")
    again = importing.import_result(disk, rerun_of(text, 3600), name="b.json")  # the same job run again
    other = importing.import_result(disk, (FIXTURES / "fio-3.33-randread-jsonplus.json").read_text(), name="c")
    assert first.profile_name == again.profile_name == "randrw 70/30 4k"
    assert other.profile_name.startswith("randread 4k")
    assert first.parameters["source"] == "a.json" and "imported from a.json" in first.explanation
    chart = owner_client.get(f"/disks/{disk.pk}/series.json?range=all").json()
    runs = {s["profile"]["name"]: s["runs"] for s in chart["series"]}
    assert runs == {"randrw 70/30 4k": 2, other.profile_name: 1}


def test_the_command_stores_each_group_or_the_one_named_and_its_dry_run_lists_them_by_label(disk):
    groups = str(FIXTURES / "real/fio-3.33-two-write-groups.txt")
    code, out, _ = _import(groups, "--dry-run", "--json")
    assert code == 0
    (listed,) = json.loads(out)
    assert [(entry["label"], entry["summary"]["runtime_s"]) for entry in listed] == [
        ("group 0 (write)", 0.012), ("group 1 (randwrite)", 0.125)
    ]  # fmt: skip
    code, out, _ = _import(groups, "--disk", str(disk.pk), "--result", "group 1 (randwrite)")
    assert code == 0 and "(group 1 (randwrite)): stored as run" in out
    assert [run.parameters["label"] for run in Run.objects.all()] == ["group 1 (randwrite)"]
    code, _, err = _import(groups, "--disk", str(disk.pk), "--result", "group 7")
    assert code == 2 and "no result labelled 'group 7' in this output; it holds 'group 0 (write)'" in err
