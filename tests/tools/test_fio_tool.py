"""jobs/tools/fio.py: job files fio accepts, and summaries of real fio output with exact numbers."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from jobs import nesting
from jobs.tools import detect, fio
from jobs.tools.options import ToolOptionError, check_extra_options
from jobs.tools.summary import ParseError, percentiles_from_bins
from tests.tools.profiles import fio_profile

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN_DIR = "/var/tmp/benchweb/runs/2b1f0c9e-6a51-4d0e-9a7e-0c5d3f1e8a42"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- job files and command lines -------------------------------------------------------------------------


def test_a_mixed_profile_on_a_directory_becomes_a_job_file_of_byte_counts() -> None:
    job = fio.build_fio_job(fio_profile(), "/data", "directory", RUN_DIR, readonly=False)

    assert job.jobfile.splitlines()[1:] == [
        "[benchweb-2b1f0c9e-6a51-4d0e-9a7e-0c5d3f1e8a42]",
        "ioengine=libaio",
        "rw=randrw",
        "rwmixread=70",
        "bs=4096",
        "iodepth=32",
        "direct=1",
        "numjobs=1",
        "runtime=60",
        "time_based=1",
        "ramp_time=5",
        "size=1073741824",
        "directory=/data",
        "unlink=1",
    ]
    assert job.jobfile.startswith(";")  # a comment line, which fio skips


def test_the_command_writes_json_status_documents_into_the_run_directory() -> None:
    job = fio.build_fio_job(fio_profile(), "/data", "directory", RUN_DIR, readonly=False)

    assert job.argv == [
        "fio",
        "--output-format=json",
        "--status-interval=1",
        f"--output={RUN_DIR}/result.json",
        f"{RUN_DIR}/job.fio",
    ]
    assert (job.jobfile_path, job.output_path) == (f"{RUN_DIR}/job.fio", f"{RUN_DIR}/result.json")
    assert shlex.split(job.argv_quoted()) == job.argv


def test_two_runs_on_one_directory_never_share_a_test_file() -> None:
    first = fio.build_fio_job(fio_profile(), "/data", "directory", "/runs/aaa", readonly=False)
    second = fio.build_fio_job(fio_profile(), "/data", "directory", "/runs/bbb", readonly=False)

    assert "[benchweb-aaa]" in first.jobfile
    assert "[benchweb-bbb]" in second.jobfile


def test_a_read_profile_on_a_device_is_read_only_and_may_not_create_files() -> None:
    job = fio.build_fio_job(fio_profile(rw="randread", size_bytes=None), "/dev/sdb", "block", RUN_DIR, readonly=True)

    assert "--readonly" in job.argv
    assert job.argv[-1] == f"{RUN_DIR}/job.fio"
    lines = job.jobfile.splitlines()
    assert "filename=/dev/sdb" in lines
    assert "allow_file_create=0" in lines
    assert not any(line.startswith(("size=", "rwmixread=", "directory=", "unlink=")) for line in lines)


def test_a_read_profile_on_a_directory_may_lay_out_its_file_so_it_gets_no_readonly_flag() -> None:
    job = fio.build_fio_job(fio_profile(rw="read"), "/data", "directory", RUN_DIR, readonly=True)

    assert "--readonly" not in job.argv
    assert "allow_file_create=0" not in job.jobfile


def test_a_read_profile_is_read_only_even_when_the_caller_does_not_say_so() -> None:
    job = fio.build_fio_job(fio_profile(rw="read", size_bytes=None), "/dev/sdb", "block", RUN_DIR, readonly=False)

    assert "--readonly" in job.argv


def test_a_writing_profile_is_refused_when_the_run_must_not_write() -> None:
    with pytest.raises(ToolOptionError) as error:
        fio.build_fio_job(fio_profile(rw="randwrite"), "/dev/sdb", "block", RUN_DIR, readonly=True)

    assert error.value.field == "rw"


def test_several_jobs_report_as_one_group_unless_the_profile_decides() -> None:
    grouped = fio.build_fio_job(fio_profile(jobs=4), "/data", "directory", RUN_DIR, readonly=False)
    separate = fio.build_fio_job(
        fio_profile(jobs=4, extra_options={"group_reporting": "0"}), "/data", "directory", RUN_DIR, readonly=False
    )

    assert "group_reporting=1" in grouped.jobfile.splitlines()
    assert "group_reporting=0" in separate.jobfile.splitlines()
    assert "group_reporting=1" not in separate.jobfile.splitlines()


def test_allowed_extra_options_are_appended_as_written() -> None:
    extras = {"norandommap": "1", "cpus_allowed": "0-3", "rate_iops": 4000}
    job = fio.build_fio_job(fio_profile(extra_options=extras), "/data", "directory", RUN_DIR, readonly=False)

    assert job.jobfile.splitlines()[-3:] == ["norandommap=1", "cpus_allowed=0-3", "rate_iops=4000"]


def test_a_directory_target_needs_a_size() -> None:
    with pytest.raises(ToolOptionError) as error:
        fio.build_fio_job(fio_profile(size_bytes=None), "/data", "directory", RUN_DIR, readonly=False)

    assert error.value.field == "size_bytes"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("exec_prerun", "rm -rf /"),
        ("exec_postrun", "reboot"),
        ("include", "/etc/fio.job"),
        ("ioengine", "external:/tmp/evil.so"),
        ("filename", "/dev/sda"),
        ("directory", "/"),
        ("filename_format", "x"),
        ("write_bw_log", "/tmp/bw"),
        ("write_lat_log", "/tmp/lat"),
        ("server", "127.0.0.1"),
        ("client", "host"),
        ("remote-config", "/x"),
        ("--exec_prerun", "id"),
        ("bs", "4k"),  # a typed field, not an extra
        ("no_such_option", "1"),
        ("norandommap", "1\nexec_prerun=id"),
        ("cpus_allowed", "0;1"),
        ("rate_iops", True),
        ("group_reporting", "yes"),
        ("fsync", "\u0661\u0662"),  # Arabic-Indic 12: \d takes it, fio does not
        ("cpus_allowed", "\u0660-\u0663"),
        ("rate", "\u0664k"),
    ],
)
def test_dangerous_unknown_or_malformed_extra_options_are_refused(name: str, value: object) -> None:
    with pytest.raises(ToolOptionError) as error:
        fio.build_fio_job(fio_profile(extra_options={name: value}), "/data", "directory", RUN_DIR, readonly=False)

    assert error.value.field == "extra_options"
    assert check_extra_options({name: value}) == {"extra_options": str(error.value)}


def test_a_refused_option_says_why() -> None:
    assert "runs a shell command" in check_extra_options({"exec_prerun": "id"})["extra_options"]
    assert "paths of their own" in check_extra_options({"write_iops_log": "x"})["extra_options"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ioengine": "external"}, "ioengine"),
        ({"ioengine": "libaio\nexec_prerun=id"}, "ioengine"),
        ({"rw": "trim"}, "rw"),
        ({"block_size_bytes": 0}, "block_size_bytes"),
        ({"block_size_bytes": "4k"}, "block_size_bytes"),
        ({"read_percent": 101}, "read_percent"),
        ({"iodepth": 0}, "iodepth"),
        ({"jobs": True}, "jobs"),
        ({"direct": "yes"}, "direct"),
        ({"runtime_s": 0}, "runtime_s"),
        ({"ramp_time_s": -1}, "ramp_time_s"),
        ({"tool": "ndisk64"}, "tool"),
        ({"extra_options": ["norandommap"]}, "extra_options"),
    ],
)
def test_profile_values_fio_cannot_run_with_name_their_field(changes: dict, field: str) -> None:
    with pytest.raises(ToolOptionError) as error:
        fio.build_fio_job(fio_profile(**changes), "/data", "directory", RUN_DIR, readonly=False)

    assert error.value.field == field


@pytest.mark.parametrize("target", ["data", "/data:/etc", "/data\n[evil]", "/data;x", "/da$ta", "/d a"])
def test_target_paths_that_would_break_the_job_file_are_refused(target: str) -> None:
    with pytest.raises(ToolOptionError) as error:
        fio.build_fio_job(fio_profile(), target, "directory", RUN_DIR, readonly=False)

    assert error.value.field == "target_path"


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"rw": "read", "jobs": 3, "time_based": False, "ramp_time_s": 0, "ioengine": "psync"},
        {"rw": "write", "direct": False, "ioengine": "io_uring", "extra_options": {"fsync": "32", "end_fsync": "1"}},
        {"extra_options": {"random_distribution": "zipf:1.2", "bssplit": "4k/50:64k/50", "percentile_list": "50:99"}},
    ],
)
def test_fio_itself_accepts_the_job_files_we_build(tmp_path: Path, changes: dict) -> None:
    job = fio.build_fio_job(fio_profile(**changes), str(tmp_path), "directory", "/runs/parse", readonly=False)
    jobfile = tmp_path / "job.fio"
    jobfile.write_text(job.jobfile)

    done = subprocess.run(["fio", "--parse-only", str(jobfile)], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_built_job_runs_under_real_fio_and_its_result_parses(tmp_path: Path) -> None:
    run_dir, target = tmp_path / "run-1", tmp_path / "target"
    run_dir.mkdir()
    target.mkdir()
    params = fio_profile(
        rw="randrw", jobs=2, runtime_s=2, ramp_time_s=0, size_bytes=1 << 20, ioengine="psync", iodepth=1, direct=False
    )
    job = fio.build_fio_job(params, str(target), "directory", str(run_dir), readonly=False)
    Path(job.jobfile_path).write_text(job.jobfile)

    done = subprocess.run(job.argv, capture_output=True, text=True, check=False, timeout=60)

    assert done.returncode == 0, done.stdout + done.stderr
    result = fio.parse_fio_json(Path(job.output_path).read_text())
    summary = result.summary
    assert (summary["processes"], summary["block_size_bytes"], summary["read_percent"]) == (2, 4096, 70.0)
    assert (summary["direct"], summary["runtime_s"]) == (False, pytest.approx(2.0, abs=0.1))
    assert summary["read"]["clat_us"]["p99"] is not None  # group_reporting kept the percentiles
    assert len(summary["samples"]) >= 1
    assert not result.job_errors
    assert list(target.iterdir()) == []  # unlink=1 removed the run's files


@pytest.mark.slow
def test_a_read_only_job_reads_an_existing_file_with_readonly(tmp_path: Path) -> None:
    device = tmp_path / "device"
    device.write_bytes(b"\0" * (1 << 20))
    run_dir = tmp_path / "run-2"
    run_dir.mkdir()
    params = fio_profile(rw="read", runtime_s=1, ramp_time_s=0, size_bytes=None, ioengine="psync", direct=False)
    job = fio.build_fio_job(params, str(device), "block", str(run_dir), readonly=True)
    Path(job.jobfile_path).write_text(job.jobfile)

    done = subprocess.run(job.argv, capture_output=True, text=True, check=False, timeout=60)

    assert done.returncode == 0, done.stdout + done.stderr
    summary = fio.parse_fio_json(Path(job.output_path).read_text()).summary
    assert summary["write"] is None
    assert summary["read"]["iops"] > 0


def test_fio_is_installed_for_the_slow_tests() -> None:
    assert shutil.which("fio"), "install fio (apt-get install fio): the job-file tests run the real one"


# --- JSON 3.x ---------------------------------------------------------------------------------------------


def test_fio_json_iops_are_total_ios_over_runtime_and_bandwidth_is_bytes_over_runtime() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-randrw.json")).summary

    assert summary["read"]["iops"] == 58365 * 1000 / 3001  # fio printed 19448.517161
    assert summary["write"]["iops"] == 24931 * 1000 / 3001
    assert summary["read"]["bw_bytes_per_s"] == 239063040 * 1000 / 3001
    assert int(summary["write"]["bw_bytes_per_s"]) == 34027782  # fio's truncated bw_bytes
    assert summary["total"] == {
        "iops": summary["read"]["iops"] + summary["write"]["iops"],
        "bw_bytes_per_s": summary["read"]["bw_bytes_per_s"] + summary["write"]["bw_bytes_per_s"],
    }


def test_fio_json_latencies_are_converted_from_nanoseconds_to_microseconds() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-randrw.json")).summary

    assert summary["read"]["clat_us"] == {
        "mean": 36.835796762,
        "max": 3588.82,
        "p50": 35.584,
        "p90": 44.288,
        "p95": 48.896,
        "p99": 69.12,
        "p99_9": 154.624,
    }


def test_fio_json_settings_fill_the_rest_of_the_summary() -> None:
    result = fio.parse_fio_json(read("fio-3.33-randrw.json"))

    assert {k: v for k, v in result.summary.items() if k not in ("total", "read", "write")} == {
        "tool": "fio",
        "tool_version": "3.33",
        "processes": 1,
        "block_size_bytes": 4096,
        "read_percent": 70.0,
        "direct": True,
        "runtime_s": 3.001,
        "samples": [],
        # As written in the JSON: "iops" : 19448.517161, "bw" : 77794, "bw_bytes" : 79661126, "runtime" : 3001
        "printed": {
            "read": {"iops": "19448.517161", "bw": "77794 KiB/s", "bw_alt": "79661126 B/s", "runtime": "3001 ms"},
            "write": {"iops": "8307.564145", "bw": "33230 KiB/s", "bw_alt": "34027782 B/s", "runtime": "3001 ms"},
            "total": None,
            # "usr_cpu" : 3.233333, "sys_cpu" : 22.833333, "ctx" : 83298, "majf" : 0, "minf" : 14
            "cpu": {"usr": "3.233333%", "sys": "22.833333%", "ctx": "83298", "majf": "0", "minf": "14"},
            "disk_util": [{"name": "vda", "util": "78.554049%", "ios": "53903/23140"}],
        },
        # "job options": rw=randrw, bs=4096, ioengine=psync (fio's own iodepth and numjobs are not written)
        "workload": {
            "rw": "randrw",
            "block_size": "4096",
            "iodepth": None,
            "numjobs": None,
            "read_percent": 70.0,
            "ioengine": "psync",
        },
        "cpu": {
            "usr_percent": 3.233333,
            "sys_percent": 22.833333,
            "ctx": 83298,
            "majf": 0,
            "minf": 14,
            "job_runtime_ms": 3000,  # "job_runtime" : 3000, the clock fio divided by
        },
        # (3.233333 + 22.833333) % of the 3000 ms clock, over 58365 + 24931 completed I/Os
        "cpu_us_per_io": pytest.approx((3.233333 + 22.833333) / 100 * 3000 * 1000 / (58365 + 24931)),
        "disk_util": [
            {
                "name": "vda",
                "read_ios": 53903,
                "write_ios": 23140,
                "read_merges": 0,
                "write_merges": 36,
                "read_ticks": 1680,
                "write_ticks": 622,
                "in_queue": 2302,
                "util_percent": 78.554049,
            }
        ],
    }
    assert result.format == "fio-json"
    assert result.settings["rwmixread"] == "70"
    assert (result.diagnostics, result.job_errors, result.latency_bins) == ([], [], None)


def test_the_summary_is_plain_json() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-randrw-status-interval.json")).summary

    assert json.loads(json.dumps(summary, allow_nan=False)) == summary


def test_status_documents_give_per_second_samples_and_the_last_is_final() -> None:
    result = fio.parse_fio_json(read("fio-3.33-randrw-status-interval.json"))

    assert result.summary["read"]["iops"] == 59923 * 1000 / 3001
    assert result.summary["samples"] == [
        {"t_s": 0.893, "read_iops": 17519 * 1000 / 893, "write_iops": 7437 * 1000 / 893},
        {"t_s": 1.894, "read_iops": (37388 - 17519) * 1000 / 1001, "write_iops": (15995 - 7437) * 1000 / 1001},
        # The final document came 108 ms after the third status one; that sliver joins the interval before.
        {"t_s": 3.001, "read_iops": (59923 - 37388) * 1000 / 1107, "write_iops": (25542 - 15995) * 1000 / 1107},
    ]


def test_samples_start_after_ramp_time_when_fio_resets_its_counters() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-ramp-status-interval.json")).summary

    assert summary["samples"] == [
        {"t_s": 1.001, "read_iops": 20354 * 1000 / 1001, "write_iops": None},
        {"t_s": 1.999, "read_iops": (43311 - 20354) * 1000 / 998, "write_iops": None},
        {"t_s": 3.001, "read_iops": (68767 - 43311) * 1000 / 1002, "write_iops": None},
    ]


def test_a_ramp_reset_is_noticed_even_when_the_counts_kept_growing() -> None:
    docs, _ = fio.fio_json_documents(read("fio-3.33-ramp-status-interval.json"))
    # As seen with ramp_time=1 and two jobs: the ramp document had fewer I/Os than the first one after reset.
    docs[0]["jobs"][0]["read"]["total_ios"] = 12000

    summary = fio.parse_fio_json("\n".join(json.dumps(doc) for doc in docs)).summary

    assert summary["samples"][0] == {"t_s": 1.001, "read_iops": 20354 * 1000 / 1001, "write_iops": None}


def test_a_status_stream_cut_off_mid_document_still_gives_the_documents_before() -> None:
    text = read("fio-3.33-randrw-status-interval.json")
    cut = text[: text.index('"fio version"', text.index('"fio version"') + 1) + 200]

    result = fio.parse_fio_json(cut)

    assert result.summary["read"]["iops"] == 17519 * 1000 / 893
    assert "ignored" in result.diagnostics[-1]
    # The printed figures are those of the last whole document, as written there.
    assert result.summary["printed"]["read"]["iops"] == "19618.141097"


def test_a_status_stream_prints_the_figures_of_its_last_document_only() -> None:
    text = read("fio-3.33-randrw-status-interval.json")
    # Trailing zeros the float would drop, in a status document and in the last one.
    text = text.replace('"iops" : 19618.141097', '"iops" : 19618.141000', 1)
    last = text.rindex('"iops" : 19')
    text = text[:last] + text[last:].replace(text[last : text.index(",", last)], '"iops" : 19968.677100', 1)

    docs, _ = fio.fio_json_documents(text)
    summary = fio.parse_fio_json(text).summary

    assert summary["printed"]["read"]["iops"] == "19968.677100"
    assert docs[0]["jobs"][0]["read"]["iops"] == 19618.141 and docs[-1]["jobs"][0]["read"]["iops"] == 19968.6771


@pytest.mark.parametrize("name", ["fio-3.33-randrw-status-interval.json", "fio-3.33-ramp-status-interval.json"])
def test_a_status_streams_documents_are_read_as_json_reads_each(name: str) -> None:
    """The status documents go through orjson, the last through json with its numbers' text: the same values."""
    text = read(name)
    starts = [i for i in range(len(text)) if text.startswith('{\n  "fio version"', i)]
    pieces = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]

    docs, other = fio.fio_json_documents(text)

    assert len(docs) == len(pieces) >= 3 and other == []
    assert docs == [json.loads(piece) for piece in pieces]
    assert [type(v) for v in docs[0]["jobs"][0]["read"].values()] == [
        type(v) for v in json.loads(pieces[0])["jobs"][0]["read"].values()
    ]


def test_a_status_document_orjson_refuses_is_read_as_before() -> None:
    """A bare nan, a control character in a string and text after a status document: json reads them as it did."""
    text = read("fio-3.33-randrw-status-interval.json")
    second = text.index('{\n  "fio version"', 10)
    first = text[:second].replace('"jobname" : "randrw"', '"jobname" : "rand\x01rw"', 1)
    first = first.replace('"iops" : ', '"iops" : -nan, "was" : ', 1) + "fio: a warning between documents\n"

    docs, other = fio.fio_json_documents(first + text[second:])

    assert docs[0]["jobs"][0]["jobname"] == "rand\x01rw" and docs[0]["jobs"][0]["read"]["iops"] is None
    assert other == ["fio: a warning between documents"]
    assert docs[1:] == fio.fio_json_documents(text)[0][1:]


@pytest.mark.parametrize("depth", [33, 2000])
def test_a_status_document_nested_beyond_what_orjson_reads_is_refused_wherever_it_is_read(depth: int) -> None:
    text = read("fio-3.33-randrw-status-interval.json")
    second = text.index('{\n  "fio version"', 10)
    deep = text[:second].replace('"jobs" : [', '"x" : ' + "[" * depth + "]" * depth + ', "jobs" : [', 1)

    if depth > 1024:  # beyond orjson's fixed limit: json reads it, and the nesting check refuses it
        with pytest.raises(ParseError, match="line 1: the fio JSON document starting here nests more than 32"):
            fio.fio_json_documents(deep + text[second:])
    else:  # nothing of a status document is kept but its numbers: read whatever the caller's stack
        nested = fio.fio_json_documents(deep + text[second:])[0][0]["x"]
        assert nesting.nests_too_deep(nested, depth - 1) and not nesting.nests_too_deep(nested, depth)


def test_text_around_the_json_is_kept_as_diagnostics() -> None:
    text = "fio: terminating on signal 2\n" + read("fio-3.33-randrw.json") + "trailing words\n"

    result = fio.parse_fio_json(text)

    assert result.diagnostics == ["fio: terminating on signal 2", "trailing words"]
    assert result.summary["read"]["iops"] == 58365 * 1000 / 3001


def test_compact_json_on_one_line_parses_like_the_pretty_one() -> None:
    doc = json.loads(read("fio-3.33-randrw.json"))

    assert fio.parse_fio_json(json.dumps(doc)).summary == fio.parse_fio_json(read("fio-3.33-randrw.json")).summary


def test_nan_and_inf_printed_by_fio_become_null() -> None:
    text = read("fio-3.33-randrw.json")
    text = text.replace('"mean" : 36835.796762', '"mean" : -nan', 1).replace('"bw_agg" : 99', '"bw_agg" : inf, "x": 99')
    text = text.replace('"jobname" : "randrw"', '"jobname" : "nan, inf\x01"')

    result = fio.parse_fio_json(text)

    assert result.summary["read"]["clat_us"]["mean"] is None
    assert result.summary["read"]["iops"] == 58365 * 1000 / 3001


def test_a_job_that_failed_is_reported_with_fios_own_words() -> None:
    result = fio.parse_fio_json(read("fio-3.33-enospc.json"))

    assert result.job_errors == [{"job": "full", "index": 0, "errno": 28, "message": "No space left on device"}]
    assert result.failed
    assert result.diagnostics == [
        "fio: pid=9561, err=28/file:io_u.c:1876, func=io_u error, error=No space left on device"
    ]
    # One write was issued and none completed: a write direction with nothing measured, not a missing one.
    assert result.summary["read"] is None
    assert result.summary["write"]["iops"] == 0.0
    assert set(result.summary["write"]["clat_us"].values()) == {None}


def test_unified_mixed_reporting_fills_only_the_total() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-randrw-mixed.json")).summary

    assert summary["read"] is None and summary["write"] is None
    assert summary["total"] == {"iops": 71426 * 1000 / 3001, "bw_bytes_per_s": 292560896 * 1000 / 3001}


def test_json_plus_bins_reproduce_fios_own_percentiles() -> None:
    docs, _ = fio.fio_json_documents(read("fio-3.33-randread-jsonplus.json"))
    clat = docs[-1]["jobs"][0]["read"]["clat_ns"]

    bins = fio.latency_bins(docs[-1])["read"]

    assert sum(bins.values()) == clat["N"] == 79376
    expected = {float(p): float(v) for p, v in clat["percentile"].items()}
    assert percentiles_from_bins(bins, list(expected)) == expected


def test_json_plus_bins_are_kept_for_histograms() -> None:
    result = fio.parse_fio_json(read("fio-3.33-randread-jsonplus.json"))

    assert set(result.latency_bins) == {"read"}
    assert sum(result.latency_bins["read"].values()) == 79376


def test_separate_job_entries_are_summed_and_their_bins_merged_into_percentiles() -> None:
    result = fio.parse_fio_json(read("fio-3.33-numjobs2-jsonplus.json"))
    summary = result.summary

    assert summary["processes"] == 2
    assert summary["read"]["iops"] == 57364 * 1000 / 3001 + 57351 * 1000 / 3001
    assert summary["read"]["bw_bytes_per_s"] == 234962944 * 1000 / 3001 + 234909696 * 1000 / 3001
    clat = summary["read"]["clat_us"]
    assert clat["mean"] == pytest.approx((51558.616833 * 57364 + 51617.716849 * 57351) / (57364 + 57351) / 1000)
    assert clat["max"] == 3525.362
    merged = percentiles_from_bins(result.latency_bins["read"], [50.0, 99.0])
    assert (clat["p50"], clat["p99"]) == (merged[50.0] / 1000, merged[99.0] / 1000)
    # Both jobs had p50 = 49408 ns; the merged p99 lies between theirs (100864 and 97792).
    assert clat["p50"] == 49.408
    assert 97.792 <= clat["p99"] <= 100.864


def test_separate_job_entries_without_bins_have_no_percentiles_rather_than_a_guess() -> None:
    doc = json.loads(read("fio-3.33-numjobs2-jsonplus.json"))
    for job in doc["jobs"]:
        del job["read"]["clat_ns"]["bins"]

    clat = fio.parse_fio_json(json.dumps(doc)).summary["read"]["clat_us"]

    assert clat["max"] == 3525.362
    assert clat["mean"] is not None
    assert [clat[k] for k in ("p50", "p90", "p95", "p99", "p99_9")] == [None] * 5


def test_a_group_reported_entry_counts_all_its_processes_and_keeps_its_percentiles() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-numjobs2-group.json")).summary

    assert summary["processes"] == 2
    assert summary["read_percent"] == 0.0
    assert summary["write"]["iops"] == 114793 * 1000 / 3001
    assert summary["write"]["clat_us"]["p99_9"] == 2768.896


def test_json_without_a_fio_document_is_refused_with_what_was_expected() -> None:
    with pytest.raises(ParseError, match="fio version"):
        fio.parse_fio_json("fio: unrecognized option '--rw=raed'\nUsage: fio ...\n")


def test_broken_json_is_refused_with_its_line_number() -> None:
    text = "warning\n" + read("fio-3.33-randrw.json").replace('"groupid" : 0,', '"groupid" : 0 oops,', 1)
    text += read("fio-3.33-randrw.json")

    with pytest.raises(ParseError, match="line 2"):
        fio.parse_fio_json(text)


def randrw_doc() -> dict:
    return json.loads(read("fio-3.33-randrw.json"))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda doc: doc["jobs"][0].update(read=1), 'job 1: "read" should be a JSON object, not a number'),
        (lambda doc: doc["jobs"][0]["job options"].update(bs=4096), "'bs' should be a string, not a number"),
        (lambda doc: doc["jobs"][0].update({"job options": [1]}), '"job options" should be a JSON object'),
        (lambda doc: doc.update({"global options": 1}), '"global options" should be a JSON object, not a number'),
        # fio 3.43's client/server output gives an array of one object a client; anything else in it is refused.
        (lambda doc: doc.update({"global options": [1]}), '"global options" 1 should be a JSON object, not a number'),
        (lambda doc: doc.update({"global options": [{"bs": 4096}]}), "'bs' should be a string, not a number"),
        (lambda doc: doc["jobs"][0]["read"]["clat_ns"].update(percentile=[]), '"read" "clat_ns" "percentile"'),
        (lambda doc: doc["jobs"][0].update(groupid=[0]), '"groupid" should be a whole number'),
        (lambda doc: doc["jobs"][0].update(error="ENOSPC"), '"error" should be an errno'),
    ],
)
def test_json_of_another_shape_than_fio_prints_is_refused_naming_the_key(change, named: str) -> None:
    doc = randrw_doc()
    change(doc)

    with pytest.raises(ParseError) as refused:
        fio.parse_fio_json(json.dumps(doc))

    assert named in str(refused.value)


def test_an_earlier_status_document_of_the_wrong_shape_is_refused_naming_it() -> None:
    status = json.loads(read("fio-3.33-randrw.json")) | {"jobs": 1}

    with pytest.raises(ParseError, match='fio JSON document 1 of 2 has no "jobs" list'):
        fio.parse_fio_json(json.dumps(status) + read("fio-3.33-randrw.json"))


@pytest.mark.parametrize(("key", "value"), [("io_bytes", -1), ("total_ios", -5), ("runtime", -3001), ("iops", "-1.5")])
def test_a_negative_count_or_time_in_json_is_refused_naming_where(key: str, value: object) -> None:
    doc = randrw_doc()
    doc["jobs"][0]["read"][key] = value
    if key == "iops":
        del doc["jobs"][0]["read"]["total_ios"]

    with pytest.raises(ParseError, match=f'job 1: "read" "{key}" is -'):
        fio.parse_fio_json(json.dumps(doc))


def test_a_negative_latency_in_json_is_refused() -> None:
    doc = randrw_doc()
    doc["jobs"][0]["read"]["clat_ns"]["mean"] = -1.0

    with pytest.raises(ParseError, match='"read" "clat_ns" "mean" is -1'):
        fio.parse_fio_json(json.dumps(doc))


@pytest.mark.parametrize(
    ("option", "value", "key"),
    [
        ("numjobs", "-2", "processes"),
        ("numjobs", "1.5", "processes"),
        ("numjobs", "\u0662", "processes"),
        ("rwmixread", "150", "read_percent"),
        ("rwmixread", "-30", "read_percent"),
        ("kb_base", "7", "block_size_bytes"),
        ("bs", "\u0664k", "block_size_bytes"),
    ],
)
def test_an_option_value_fio_would_refuse_leaves_its_summary_field_unknown(option: str, value: str, key: str) -> None:
    doc = randrw_doc()
    doc["jobs"][0]["job options"][option] = value

    assert fio.parse_fio_json(json.dumps(doc)).summary[key] is None


def test_totals_that_overflow_to_infinity_are_refused_as_implausible() -> None:
    doc = randrw_doc()
    doc["jobs"][0]["read"] |= {"total_ios": 1e306, "runtime": 1}

    with pytest.raises(ParseError, match=r"implausible value inf for total\.iops"):
        fio.parse_fio_json(json.dumps(doc))


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ('"x": ' + "1" * 4301 + "}", "holds a number too long to read"),
        ('"x": ' + "[" * 100_000, "nests more than 32 levels deep"),
        # Readable by json at a shallow stack, not at a deep one: refused wherever it is read, not once of twice.
        ('"x": ' + "[" * 900 + "]" * 900 + "}", "nests more than 32 levels deep"),
        ('"x": ' + "[" * 32 + "]" * 32 + "}", "nests more than 32 levels deep"),
    ],
)
def test_json_that_python_cannot_read_is_refused_with_its_line(tail: str, why: str) -> None:
    with pytest.raises(ParseError, match=f"line 2: the fio JSON document starting here {why}"):
        fio.parse_fio_json('warning\n{"fio version": "fio-3.33", "jobs": [], ' + tail)


@pytest.mark.parametrize("key", ["\u00b2", "\u0661", "1" + "0" * 309, "-5", "5.5"])
def test_a_json_plus_bin_that_is_not_a_latency_in_ns_is_refused(key: str) -> None:
    doc = json.loads(read("fio-3.33-randread-jsonplus.json"))
    doc["jobs"][0]["read"]["clat_ns"]["bins"][key] = 1

    with pytest.raises(ParseError, match='job 1: "read" "clat_ns" "bins"'):
        fio.parse_fio_json(json.dumps(doc))


def test_a_json_error_beyond_float_range_is_refused_not_read_as_no_error() -> None:
    text = read("fio-3.33-randrw.json").replace('"error" : 0', '"error" : 1' + "0" * 309, 1)

    with pytest.raises(ParseError, match='job 1: "error" should be an errno'):
        fio.parse_fio_json(text)


# --- JSON 2.x ---------------------------------------------------------------------------------------------


def test_fio_2_json_reads_io_bytes_as_kib_and_latency_in_microseconds() -> None:
    summary = fio.parse_fio_json(read("fio-2.15-randrw.json")).summary

    assert summary["tool_version"] == "2.15"
    assert summary["read"]["iops"] == 80993 * 1000 / 3001
    assert summary["read"]["bw_bytes_per_s"] == 323972 * 1024 * 1000 / 3001
    assert summary["read"]["clat_us"] == {
        "mean": 25.04,
        "max": 1815.0,
        "p50": 24.0,
        "p90": 27.0,
        "p95": 29.0,
        "p99": 45.0,
        "p99_9": 151.0,
    }
    assert summary["write"]["bw_bytes_per_s"] == 139292 * 1024 * 1000 / 3001
    assert (summary["block_size_bytes"], summary["read_percent"], summary["direct"]) == (4096, 70.0, True)


# --- text report ------------------------------------------------------------------------------------------


def test_the_text_report_gives_iops_from_issued_ios_over_runtime() -> None:
    summary = fio.parse_fio_text(read("fio-3.33-randrw.txt")).summary

    assert summary["read"]["iops"] == 51010 * 1000 / 3001
    assert summary["write"]["iops"] == 21895 * 1000 / 3001
    assert f"{summary['read']['iops'] / 1000:.1f}k" == "17.0k"  # as printed: IOPS=17.0k
    assert round(summary["write"]["iops"]) == 7296  # printed IOPS=7295, truncated


def test_the_text_report_gives_bandwidth_and_latency_as_printed() -> None:
    summary = fio.parse_fio_text(read("fio-3.33-randrw.txt")).summary

    assert summary["read"]["bw_bytes_per_s"] == 66.4 * 1024 * 1024  # BW=66.4MiB/s
    assert summary["read"]["bw_bytes_per_s"] == pytest.approx(51010 * 4096 / 3.001, rel=1e-3)
    assert summary["read"]["clat_us"] == {
        "mean": 41.25,
        "max": 4253.0,
        "p50": 40.0,
        "p90": 48.0,
        "p95": 54.0,
        "p99": 80.0,
        "p99_9": 184.0,
    }
    assert summary["write"]["clat_us"]["p99_9"] == 198.0
    assert (summary["tool_version"], summary["processes"], summary["block_size_bytes"]) == ("3.33", 1, 4096)
    assert (summary["runtime_s"], summary["read_percent"], summary["direct"]) == (3.001, None, None)


def test_a_text_report_pasted_with_its_newlines_collapsed_parses_the_same() -> None:
    text = read("fio-3.33-randrw.txt")
    collapsed = " ".join(text.split())

    assert "\n" not in collapsed
    assert fio.parse_fio_text(collapsed).summary == fio.parse_fio_text(text).summary


def test_text_job_sections_are_summed_without_inventing_percentiles() -> None:
    summary = fio.parse_fio_text(read("fio-3.33-numjobs2.txt")).summary

    assert summary["processes"] == 2
    assert summary["read"]["iops"] == 62932 * 1000 / 3001 + 62958 * 1000 / 3001
    assert summary["read"]["clat_us"]["max"] == 2415.0
    assert summary["read"]["clat_us"]["mean"] == pytest.approx(46.96)
    assert summary["read"]["clat_us"]["p50"] is None
    assert summary["read_percent"] == 100.0


def test_a_failed_job_in_a_text_report_is_reported() -> None:
    result = fio.parse_fio_text(read("fio-3.33-enospc.txt"))

    assert result.job_errors == [{"job": "full", "index": 0, "errno": 28, "message": "No space left on device"}]
    assert result.summary["total"] == {"iops": 0.0, "bw_bytes_per_s": 0.0}
    assert result.summary["write"] is None


def test_a_fio_2_text_report_uses_1024_based_kb() -> None:
    summary = fio.parse_fio_text(read("fio-2.15-randrw.txt")).summary

    assert summary["tool_version"] == "2.15"
    assert summary["read"]["iops"] == 80993 * 1000 / 3001  # printed iops=26988
    assert summary["read"]["bw_bytes_per_s"] == 107955 * 1024  # bw=107955KB/s
    assert summary["write"]["bw_bytes_per_s"] == 46415 * 1024
    assert summary["read"]["clat_us"]["mean"] == 25.04
    assert summary["read"]["clat_us"]["p99_9"] == 151.0
    assert summary["block_size_bytes"] == 4096  # bs=4K-4K/4K-4K/4K-4K


def test_text_without_job_headers_is_refused() -> None:
    with pytest.raises(ParseError, match="groupid=0, jobs=1"):
        fio.parse_fio_text("Jobs: 1 (f=1): [r(1)][50.0%][r=94.3MiB/s][eta 00m:01s]")


def test_a_job_header_with_digits_of_another_script_is_not_a_header() -> None:
    with pytest.raises(ParseError, match="found none"):
        fio.parse_fio_text("j: (groupid=0, jobs=\u0661): err= 0")


def test_a_text_number_too_long_for_an_int_is_refused_naming_the_job() -> None:
    with pytest.raises(ParseError, match=r"job 1 \('j'\): jobs=: .* has 4301 digits"):
        fio.parse_fio_text("j: (groupid=0, jobs=" + "1" * 4301 + "): err= 0")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("BW=66.4MiB/s", "BW=" + "9" * 400 + "MiB/s"),
        ("BW=66.4MiB/s", "BW=" + "9" * 300 + "EiB/s"),
        ("bs=(R) 4096B-4096B", "bs=(R) 4096B-" + "9" * 400 + "B"),
    ],
)
def test_a_text_number_beyond_float_range_is_refused(old: str, new: str) -> None:
    text = read("fio-3.33-randrw.txt")
    assert old in text

    with pytest.raises(ParseError, match="too large to be a number"):
        fio.parse_fio_text(text.replace(old, new, 1))


def test_a_long_pasted_line_is_read_in_linear_time() -> None:
    report = " ".join(read("fio-3.33-randrw.txt").split())
    # Not a speed target: a guard against a pattern that backtracks over the line, which at a million characters
    # takes hours, not seconds. This process's CPU time, with a wide margin (well under a second when linear), so
    # that a busy machine does not fail it (the wall clock did: 1.4 s beside a bench).
    started = time.process_time()

    summary = fio.parse_fio_text("x" * 1_000_000 + " " + report).summary
    with pytest.raises(ParseError):
        fio.parse_fio_text("x" * 1_000_000)

    assert time.process_time() - started < 20.0
    assert summary == fio.parse_fio_text(report).summary


# --- terse ------------------------------------------------------------------------------------------------


def test_terse_v3_fields_are_read_by_position() -> None:
    result = fio.parse_fio_terse(read("fio-3.33-randrw.terse"))
    summary = result.summary

    assert summary["read"]["iops"] == 17550.0
    assert summary["read"]["bw_bytes_per_s"] == 210672 * 1024 * 1000 / 3001
    assert summary["read"]["clat_us"] == {
        "mean": 40.092656,
        "max": 4188.0,
        "p50": 38.0,
        "p90": 46.0,
        "p95": 51.0,
        "p99": 77.0,
        "p99_9": 171.0,
    }
    assert summary["write"]["iops"] == 7523.0
    assert summary["write"]["clat_us"]["p99"] == 68.0
    assert (summary["tool_version"], summary["runtime_s"], summary["processes"]) == ("3.33", 3.001, None)
    assert result.format == "fio-terse"


def test_terse_lines_of_another_version_or_cut_short_are_refused() -> None:
    line = read("fio-3.33-randrw.terse").strip()

    with pytest.raises(ParseError, match="terse version 6; versions 2, 3, 4 and 5 are read"):
        fio.parse_fio_terse("6" + line[1:])
    with pytest.raises(ParseError, match=r"line 1: a terse v5 line needs at least 146 fields; this one has 130"):
        fio.parse_fio_terse("5" + line[1:])
    with pytest.raises(ParseError, match=r"line 2: .* has 30"):
        fio.parse_fio_terse("hello\n" + ";".join(line.split(";")[:30]))


@pytest.mark.parametrize(("field", "value"), [(6, "-1"), (8, "-0.5"), (9, "\u0663"), (6, "1_000")])
def test_a_terse_field_that_is_negative_or_not_an_ascii_number_is_refused(field: int, value: str) -> None:
    fields = read("fio-3.33-randrw.terse").strip().split(";")
    fields[field - 1] = value

    with pytest.raises(ParseError, match=f"line 1: terse field {field} should be a number that is not negative"):
        fio.parse_fio_terse(";".join(fields))


def test_terse_totals_that_overflow_to_infinity_are_refused_as_implausible() -> None:
    with pytest.raises(ParseError, match="implausible value inf"):
        fio.parse_fio_terse("3;fio-3.33;j;0;0;1e306;0;1;1" + ";0" * 80)


# --- excerpts: a lone summary line, as people quote it -----------------------------------------------------

EXCERPT_3 = "  write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)\n"
EXCERPT_2 = "  write: io=10240MB, bw=93768KB/s, iops=23441 , runt=111824msec\n"
COMMAND = "$ fio --name=seqwrite --rw=write --bs=4k --iodepth=1 --numjobs=1 --size=10G --direct=1\n"


def test_a_3x_summary_line_alone_is_a_partial_result_with_fios_rounded_iops() -> None:
    result = fio.parse_fio_excerpt(EXCERPT_3)
    summary = result.summary

    # "23.4k" is 23,400 as fio rounded it; 91.6 MiB/s; 111824 ms
    assert summary["write"]["iops"] == 23400
    assert summary["write"]["bw_bytes_per_s"] == pytest.approx(91.6 * 1024**2)
    assert summary["runtime_s"] == 111.824
    assert summary["printed"]["write"] == {
        "iops": "23.4k",
        "bw": "91.6MiB/s",
        "bw_alt": "96.0MB/s",
        "runtime": "111824msec",
    }
    assert summary["workload"] == {
        "rw": None,
        "block_size": None,
        "iodepth": None,
        "numjobs": None,
        "read_percent": None,
        "ioengine": None,
    }
    assert (summary["read"], summary["read_percent"], summary["block_size_bytes"]) == (None, None, None)
    assert result.partial == (
        "only fio's summary line: no latency, no job options (rw, block size, iodepth, jobs); "
        "write IOPS=23.4k is as fio rounded it."
    )


def test_the_command_line_above_a_summary_line_gives_the_workload_and_an_exact_iops() -> None:
    result = fio.parse_fio_excerpt(COMMAND + EXCERPT_3)
    summary = result.summary

    assert summary["workload"] == {
        "rw": "write",
        "block_size": "4k",
        "iodepth": 1,
        "numjobs": 1,
        "read_percent": 0.0,
        "ioengine": None,
    }
    assert (summary["block_size_bytes"], summary["read_percent"], summary["direct"]) == (4096, 0.0, True)
    # BW=91.6MiB/s is fio's most precise figure here (±0.05 of 91.6): 91.6 MiB/s ÷ 4096 B = 23449.6 IOPS
    assert summary["write"]["iops"] == pytest.approx(91.6 * 1024**2 / 4096)
    assert result.diagnostics == [
        "write IOPS 23449.6 is BW=91.6MiB/s ÷ 4096 B (the block size from the fio command line); fio printed "
        "IOPS=23.4k, rounded."
    ]
    assert "write IOPS=23.4k is as fio rounded it; the IOPS stored is derived" in result.partial
    assert "no job options" not in result.partial


def test_a_2x_summary_line_keeps_its_exact_iops_and_1024_based_kb() -> None:
    result = fio.parse_fio_excerpt(EXCERPT_2)
    summary = result.summary

    assert summary["write"]["iops"] == 23441
    assert summary["write"]["bw_bytes_per_s"] == 93768 * 1024
    assert summary["printed"]["write"] == {"iops": "23441", "bw": "93768KB/s", "runtime": "111824msec"}
    assert "rounded" not in result.partial
    assert result.diagnostics == []


def test_a_summary_line_of_each_direction_is_one_partial_result() -> None:
    text = (
        "read: IOPS=17.0k, BW=66.4MiB/s (69.6MB/s)(199MiB/3001msec)\n"
        "write: IOPS=7295, BW=28.5MiB/s (29.9MB/s)(85.5MiB/3001msec)\n"
    )

    summary = fio.parse_fio_excerpt(text).summary

    assert (summary["read"]["iops"], summary["write"]["iops"]) == (17000, 7295)
    assert summary["total"]["iops"] == 24295
    assert summary["runtime_s"] == 3.001


def test_text_with_no_summary_line_is_refused_as_an_excerpt() -> None:
    with pytest.raises(ParseError, match=r"Expected a fio summary line such as 'write: IOPS=23\.4k"):
        fio.parse_fio_excerpt("write: nothing here")


def test_live_progress_is_the_latest_interval_and_says_when_it_ended() -> None:
    """The first status document alone is its own first interval (the figure appears a poll sooner), and the
    figure says which second of fio's runtime it is of."""
    from jobs.runners import FioRunner

    text = read("fio-3.33-randrw-status-interval.json")
    docs, _ = fio.fio_json_documents(text)
    assert len(docs) >= 3
    first = text[: text.index('{\n  "fio version"', 10)]
    one = FioRunner().progress(first, {})
    ms = max(job[d]["runtime"] for job in docs[0]["jobs"] for d in ("read", "write"))
    ios = sum(job["read"]["total_ios"] for job in docs[0]["jobs"])
    assert one["read_iops"] == pytest.approx(ios * 1000 / ms) and one["iops_at_s"] == round(ms / 1000, 1)
    latest = FioRunner().progress(text, {})
    ms = [max(job[d]["runtime"] for job in doc["jobs"] for d in ("read", "write")) for doc in docs[-2:]]
    ios = [sum(job["write"]["total_ios"] for job in doc["jobs"]) for doc in docs[-2:]]
    assert latest["write_iops"] == pytest.approx((ios[1] - ios[0]) * 1000 / (ms[1] - ms[0]))
    assert latest["iops_at_s"] == round(ms[1] / 1000, 1)
    assert FioRunner().progress("", {}) == {}


def test_the_job_description_line_above_a_summary_line_gives_the_workload() -> None:
    text = (
        "myjob: (g=0): rw=randwrite, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, "
        "iodepth=32\n"
        "  write: IOPS=28.8k, BW=112MiB/s (118MB/s)(4096MiB/36447msec)\n"
    )

    result = fio.parse_fio_excerpt(text)

    assert result.summary["workload"] == {
        "rw": "randwrite",
        "block_size": "4096B",
        "iodepth": 32,
        "numjobs": None,
        "read_percent": 0.0,
        "ioengine": "libaio",
    }
    # 4096MiB ÷ 4096 B ÷ 36.447 s: the I/O total (±0.5 MiB) is finer than "28.8k" (±50) or 112MiB/s (±0.5)
    assert result.summary["write"]["iops"] == pytest.approx(4096 * 1024**2 / 4096 / 36.447)
    assert "the job description line" in result.partial


def test_many_groups_are_read_in_linear_time() -> None:
    """3,000 "All clients" sections took 160 s when each result searched the whole text again."""
    section = "All clients: (groupid={}, jobs=1): err= 0: pid=0\n  read: IOPS=1, BW=1Mi (1M)(1MiB/1000msec)\n"
    text = "".join(section.format(group) for group in range(3000))

    started = time.process_time()  # this process's CPU: a busy machine does not fail it
    results = detect.parse_all(text)

    assert len(results) == 3000
    assert time.process_time() - started < 10


def test_a_long_bssplit_without_colons_is_refused_at_once_and_fios_own_form_is_kept():
    # The old pattern "([0-9]+[kKmM]?/[0-9]+:?)+" backtracked exponentially on this: 24 entries took ~3 s, 40 would
    # take hours, holding a web worker. fio separates bssplit entries with ':'.
    assert "invalid value" in check_extra_options({"bssplit": "1k/11" * 40 + "#"})["extra_options"]
    assert "invalid value" in check_extra_options({"bssplit": "1k/111k/11"})["extra_options"]
    many = ":".join(f"{size}k/{share}" for size, share in zip(range(1, 201), [1] * 200, strict=True))
    assert check_extra_options({"bssplit": many}) == {}
    assert check_extra_options({"bssplit": "4k/50:64k/50:"}) == {}
