"""jobs/tools/ndisk.py on the real AIX capture. ndisk64 itself cannot run here (AIX/Power only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.tools import ndisk
from jobs.tools.options import ToolOptionError
from jobs.tools.summary import ParseError
from tests.tools.profiles import ndisk_profile

FIXTURES = Path(__file__).parent.parent / "fixtures"
REAL = (FIXTURES / "ndisk_4proc_random_direct.txt").read_text()
SINGLE = (FIXTURES / "ndisk_1proc_random_direct_derived.txt").read_text()


# --- command line -----------------------------------------------------------------------------------------


def test_the_field_report_profile_becomes_the_command_that_produced_the_real_output() -> None:
    argv = ndisk.build_ndisk_argv(ndisk_profile(), "/data/test", "directory", "/var/tmp/benchweb/run-7")

    assert argv == [
        "ndisk64",
        "-R",
        "-r",
        "50",
        "-M",
        "4",
        "-b",
        "4K",
        "-s",
        "32M",
        "-t",
        "60",
        "-D",
        "-f",
        "/data/test/benchweb-run-7-1",
        "/data/test/benchweb-run-7-2",
        "/data/test/benchweb-run-7-3",
        "/data/test/benchweb-run-7-4",
    ]


def test_a_device_target_is_the_only_file_all_processes_share() -> None:
    argv = ndisk.build_ndisk_argv(
        ndisk_profile(pattern="sequential", direct=False, read_percent=100, block_size_bytes=65536, size_bytes=1 << 30),
        "/dev/rhdisk4",
        "block",
        "/runs/x",
    )

    assert argv == ["ndisk64", "-S", "-r", "100", "-M", "4", "-b", "64K", "-s", "1G", "-t", "60", "-f", "/dev/rhdisk4"]


def test_sizes_that_are_not_whole_kilobytes_are_sent_in_bytes() -> None:
    argv = ndisk.build_ndisk_argv(
        ndisk_profile(block_size_bytes=1536, size_bytes=3 << 20), "/dev/sdb", "block", "/runs/x"
    )

    assert argv[argv.index("-b") + 1] == "1536"
    assert argv[argv.index("-s") + 1] == "3M"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"size_bytes": None}, "size_bytes"),
        ({"pattern": "zigzag"}, "pattern"),
        ({"read_percent": -1}, "read_percent"),
        ({"jobs": 0}, "jobs"),
        ({"direct": 1}, "direct"),
        ({"tool": "fio"}, "tool"),
    ],
)
def test_profile_values_ndisk64_cannot_run_with_name_their_field(changes: dict, field: str) -> None:
    with pytest.raises(ToolOptionError) as error:
        ndisk.build_ndisk_argv(ndisk_profile(**changes), "/data", "directory", "/runs/x")

    assert error.value.field == field


@pytest.mark.parametrize("target", ["/data,x", "/data+x", "/data:x", "relative", "/data\n-f"])
def test_targets_ndisk64_would_split_or_misread_are_refused(target: str) -> None:
    with pytest.raises(ToolOptionError) as error:
        ndisk.build_ndisk_argv(ndisk_profile(), target, "block", "/runs/x")

    assert error.value.field == "target_path"


# --- report -----------------------------------------------------------------------------------------------


def test_the_totals_row_gives_the_run_total_in_bytes_per_second() -> None:
    result = ndisk.parse_ndisk(REAL)

    assert result.summary["total"] == {"iops": 20030.0, "bw_bytes_per_s": 80119.94 * 1024}
    assert result.format == "ndisk64"
    assert result.diagnostics == []
    assert not result.failed


def test_bytes_per_second_over_iops_is_the_block_size_because_the_table_is_1024_based() -> None:
    summary = ndisk.parse_ndisk(REAL).summary

    # 80119.94 KB/s x 1024 / 20030.0 IO/s = 4096.0 bytes per I/O, within the table's 0.1 IO/s rounding;
    # read as 1000-based it would come to 4000.
    assert summary["total"]["bw_bytes_per_s"] / summary["total"]["iops"] == pytest.approx(4096, abs=0.05)
    assert summary["block_size_bytes"] == 4096


def test_the_header_and_closing_line_fill_the_rest_of_the_summary() -> None:
    summary = ndisk.parse_ndisk(REAL).summary

    assert {k: v for k, v in summary.items() if k != "total"} == {
        "tool": "ndisk64",
        "tool_version": None,
        "read": None,  # ndisk64 reports totals only; splitting them by -r would be a guess
        "write": None,
        "processes": 4,
        "block_size_bytes": 4096,
        "read_percent": 50.0,  # "Equal read and write", "read= 50%"
        "direct": True,  # "Direct I/O mode - O_DIRECT"
        "runtime_s": 60.0,
        "samples": [],
        # The TOTALS row as printed: "TOTALS   1201798  20030.0 |     78.24     80119.94"
        "printed": {
            "read": None,
            "write": None,
            "total": {"iops": "20030.0 IO/s", "bw": "80119.94 KB/s", "bw_alt": "78.24 MB/s"},
            "cpu": None,  # fio's own view: ndisk64 prints neither a cpu line nor disk util
            "disk_util": [],
        },
        # "I/O type = Random", "Block size = 4096", four process rows, "Equal read and write"
        "workload": {
            "rw": "randrw",
            "block_size": "4096",
            "iodepth": None,
            "numjobs": 4,
            "read_percent": 50.0,
            "ioengine": None,
        },
        "cpu": None,
        "cpu_us_per_io": None,
        "disk_util": [],
    }


def test_every_header_label_is_kept_under_a_normalised_name() -> None:
    settings = ndisk.parse_ndisk(REAL).settings

    assert settings["no. of processes"] == "4"
    assert settings["read-write"] == "Equal read and write"
    assert settings["file size"] == "33554432 bytes = 32768 KB = 32 MB"
    assert settings["sync type: none"] == "just close the file"
    assert settings["title"] == "Synchronous Disk test (regular read/write)"
    assert settings["command"].startswith("./ndisk64 -f /data/test/testfile1 ")


def test_a_single_process_run_without_a_totals_row_uses_its_process_row() -> None:
    result = ndisk.parse_ndisk(SINGLE)

    assert result.summary["total"] == {"iops": 5013.3, "bw_bytes_per_s": 20053.28 * 1024}
    assert (result.summary["processes"], result.summary["runtime_s"]) == (1, 60.0)
    assert result.diagnostics == []


def test_totals_that_disagree_with_the_rows_are_flagged() -> None:
    text = REAL.replace("TOTALS   1201798  20030.0", "TOTALS   1201798  30030.0")

    result = ndisk.parse_ndisk(text)

    assert result.summary["total"]["iops"] == 30030.0
    assert "differs from the sum of the process rows (20029.9)" in result.diagnostics[0]


def test_several_processes_without_totals_are_summed_and_flagged() -> None:
    text = "\n".join(line for line in REAL.splitlines() if not line.startswith("TOTALS"))

    result = ndisk.parse_ndisk(text)

    assert result.summary["total"]["iops"] == pytest.approx(20029.9)
    assert result.diagnostics == ["No TOTALS row; the total is the sum of the process rows."]


def test_unknown_lines_such_as_errors_are_kept_as_diagnostics() -> None:
    text = REAL.replace("stop  randomise\n", "stop  randomise\nwarning: slow device\n", 1)

    assert ndisk.parse_ndisk(text).diagnostics == ["warning: slow device"]


def test_output_without_process_rows_is_a_failure_whatever_the_exit_status() -> None:
    header_only = REAL.split("Proc - ")[0] + "open(/data/test/testfile1) failed: Permission denied\n"

    with pytest.raises(ParseError, match="process rows"):
        ndisk.parse_ndisk(header_only)


def test_two_block_sizes_in_one_output_are_refused() -> None:
    table = REAL[REAL.index("----> Running") :]

    with pytest.raises(ParseError, match="second block size"):
        ndisk.parse_ndisk(REAL + table.replace("Size=4096 (4KB)", "Size=8192 (8KB)"))


@pytest.mark.parametrize(
    ("words", "percent"),
    [("Equal read and write", 50.0), ("80:20", 80.0), ("100% read", 100.0), ("read only", 100.0), ("?", None)],
)
def test_the_read_write_header_is_read_in_words_or_as_a_ratio(words: str, percent: float | None) -> None:
    text = REAL.replace("Equal read and write", words).replace("- Random procs=  4 read= 50% bs=  4KB\n", "")
    text = text.replace(" -r 50 ", " ")

    assert ndisk.parse_ndisk(text).summary["read_percent"] == percent


@pytest.mark.parametrize(
    ("old", "new"),
    [("No. of processes = 4", "No. of processes = \u00b2"), ("Block size       = 4096", "Block size = \u0664")],
)
def test_a_header_value_in_digits_int_cannot_read_is_not_read(old: str, new: str) -> None:
    result = ndisk.parse_ndisk(REAL.replace(old, new))

    assert result.summary["processes"] == 4
    assert result.summary["block_size_bytes"] == 4096  # from "Running test with block Size=4096"
    assert result.diagnostics == []


@pytest.mark.parametrize("flag", ["\u00b2", "150", "-5"])
def test_a_read_flag_ndisk64_would_refuse_leaves_the_read_share_unknown(flag: str) -> None:
    text = REAL.replace("Equal read and write", "?").replace("- Random procs=  4 read= 50% bs=  4KB\n", "")

    assert ndisk.parse_ndisk(text.replace(" -r 50 ", f" -r {flag} ")).summary["read_percent"] is None


def test_a_row_with_a_number_that_is_not_one_is_not_a_row() -> None:
    text = REAL.replace("   5013.3 |", "  5013.3.1 |")

    result = ndisk.parse_ndisk(text)

    assert result.diagnostics[0].startswith("1 -    300800  5013.3.1 |")
    assert result.summary["processes"] == 3


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("   1 -    300800", "1" * 4301 + " -    300800", "line 24: process number: .* has 4301 digits"),
        ("20053.28", "9" * 400, "line 24: KB/sec: .* too large"),
        ("TOTALS   1201798  20030.0", "TOTALS   1201798  " + "9" * 400, "line 28: TOTALS IO/sec: .* too large"),
    ],
)
def test_a_number_too_long_to_be_one_ndisk64_printed_is_refused_naming_its_line(old: str, new: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        ndisk.parse_ndisk(REAL.replace(old, new, 1))
