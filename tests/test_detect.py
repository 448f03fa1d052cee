"""jobs/tools/detect.py: every fixture is recognised as what it is, and junk is refused in one way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.tools import detect, fio, ndisk
from jobs.tools.summary import ParseError

FIXTURES = Path(__file__).parent / "fixtures"


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
