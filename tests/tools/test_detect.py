"""jobs/tools/detect.py: every fixture is recognised as what it is, and junk is refused in one way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.tools import detect, fio, ndisk
from jobs.tools.summary import ParseError

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("fio-3.33-randrw.json", "fio-json"),
        ("fio-3.33-randread-jsonplus.json", "fio-json"),
        ("fio-3.33-randrw-status-interval.json", "fio-json"),
        ("fio-3.33-enospc.json", "fio-json"),
        ("fio-2.15-randrw.json", "fio-json"),
        ("fio-3.33-randrw.txt", "fio-text"),
        ("fio-3.33-numjobs2.txt", "fio-text"),
        ("fio-3.33-enospc.txt", "fio-text"),
        ("fio-2.15-randrw.txt", "fio-text"),
        ("fio-3.33-randrw.terse", "fio-terse"),
        ("ndisk_4proc_random_direct.txt", "ndisk64"),
        ("ndisk_1proc_random_direct_derived.txt", "ndisk64"),
    ],
)
def test_each_fixture_is_detected_and_parsed_as_its_format(name: str, fmt: str) -> None:
    text = (FIXTURES / name).read_text()

    result = detect.parse_output(text)

    assert detect.detect_format(text) == fmt
    assert result.format == fmt
    assert result.summary["tool"] == ("ndisk64" if fmt == "ndisk64" else "fio")


def test_a_collapsed_text_report_is_still_a_text_report() -> None:
    text = " ".join((FIXTURES / "fio-3.33-randrw.txt").read_text().split())

    assert detect.detect_format(text) == "fio-text"


def test_json_is_recognised_even_when_a_job_description_looks_like_another_format() -> None:
    doc = json.loads((FIXTURES / "fio-3.33-randrw.json").read_text())
    doc["jobs"][0]["job options"]["description"] = "TOTALS 1 2 | 3 4\n3;fio-3.33;x;"

    assert detect.detect_format(json.dumps(doc, indent=2)) == "fio-json"


def test_parse_output_gives_what_the_format_parser_gives() -> None:
    text = (FIXTURES / "ndisk_4proc_random_direct.txt").read_text()

    assert detect.parse_output(text) == ndisk.parse_ndisk(text)
    assert detect.parse_output(text, "ndisk64") == ndisk.parse_ndisk(text)


def test_a_format_named_by_the_user_is_used_as_named() -> None:
    text = (FIXTURES / "fio-3.33-randrw.txt").read_text()

    assert detect.parse_output(text, "fio-text") == fio.parse_fio_text(text)
    with pytest.raises(ParseError, match="groupid"):
        detect.parse_output("nothing", "fio-text")
    with pytest.raises(ParseError, match="Unknown format 'csv'"):
        detect.parse_output(text, "csv")


@pytest.mark.parametrize(
    "text",
    ["", "hello world", "fio: unrecognized option '--rw=raed'\n", "Usage: ndisk64 -f file [-R|-S] ...\n"],
)
def test_text_that_is_no_known_output_is_refused_with_what_was_expected(text: str) -> None:
    with pytest.raises(ParseError, match="expected fio JSON"):
        detect.detect_format(text)


@pytest.mark.parametrize(
    ("name", "fmt", "labels"),
    [
        ("real/fio-3.33-two-write-groups.txt", "fio-text", ["group 0 (write)", "group 1 (randwrite)"]),
        ("real/fio-3.33-two-write-groups.json", "fio-json", ["group 0 (write)", "group 1 (randwrite)"]),
        ("real/fio-3.33-two-write-groups-v2.terse", "fio-terse", ["group 0", "group 1"]),
        ("real/fio-3.33-two-write-groups-v5.terse", "fio-terse", ["group 0", "group 1"]),
        ("real/fio-3.33-client-server-two-servers.txt", "fio-text", ["client 1", "client 2", "All clients"]),
        (
            "real/fio-3.33-client-server-two-servers.json",
            "fio-json",
            ["client 127.0.0.1", "client 127.0.0.2", "All clients"],
        ),
        ("fio-3.33-randrw.json", "fio-json", [""]),
        ("ndisk_4proc_random_direct.txt", "ndisk64", [""]),
    ],
)
def test_parse_all_gives_one_labelled_result_per_group_and_client(name: str, fmt: str, labels: list[str]) -> None:
    text = (FIXTURES / name).read_text()

    found = detect.parse_all(text)

    assert detect.detect_format(text) == fmt
    assert [r.label for r in found] == labels
    assert all(r.format == fmt and r.partial == "" for r in found)


def test_parse_output_of_several_groups_is_the_first_group_never_their_sum() -> None:
    text = (FIXTURES / "real/fio-3.33-two-write-groups.txt").read_text()

    first = detect.parse_output(text)

    # group 0 ran 12 ms and group 1 125 ms; the old parser stored one result of 137 ms
    assert first.summary["runtime_s"] == 0.012
    assert first.label == "group 0 (write)"
    assert "This output holds 2 results (group 0 (write); group 1 (randwrite))" in first.diagnostics[-1]


def test_a_launched_single_group_run_keeps_its_one_unlabelled_result() -> None:
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()

    assert detect.parse_all(text) == [detect.parse_output(text)]
    assert detect.parse_output(text).label == ""


@pytest.mark.parametrize(
    "text",
    [
        "  write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)",
        "read: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)\n",
        "  write: io=10240MB, bw=93768KB/s, iops=23441 , runt=111824msec\n",
    ],
)
def test_a_lone_summary_line_is_an_excerpt(text: str) -> None:
    assert detect.detect_format(text) == "fio-excerpt"
    [result] = detect.parse_all(text)
    assert result.format == "fio-excerpt"
    assert result.partial.startswith("only fio's summary line")


def test_run_status_lines_alone_are_refused_naming_what_to_paste() -> None:
    text = (
        "Run status group 0 (all jobs):\n   READ: bw=1877KiB/s (1922kB/s), io=31.0MiB (32.5MB), run=16921-16921msec\n"
    )

    with pytest.raises(ParseError, match=r"no IOPS\. Paste the job sections"):
        detect.detect_format(text)


@pytest.mark.parametrize("marker", ["# ", "#> ", "> "])
def test_a_report_quoted_line_by_line_reads_as_the_report(marker: str) -> None:
    """The cloudbench report (tests/fixtures/real/README.md) was published in Python comments, "# " a line."""
    text = (FIXTURES / "real/fio-2.0.15-rw-cloudbench.txt").read_text()
    quoted = "".join(f"{marker}{line}" if line.strip() else marker.strip() + "\n" for line in text.splitlines(True))

    assert detect.parse_output(quoted).summary == detect.parse_output(text).summary
    # 99.90th=[ 3952] is on the fourth row of quoted percentiles: every row was read
    assert detect.parse_all(quoted)[0].summary["write"]["clat_us"]["p99_9"] == 3952
