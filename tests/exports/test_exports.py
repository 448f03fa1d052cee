"""The CSV downloads (jobs/exports/): read back with the csv module they equal the database's rows, cells a
spreadsheet would run are defused, nothing measured is shown as 0, and another team's runs are out of reach."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from jobs.api.models import ApiToken
from jobs.exports import tables
from jobs.imports import importing
from jobs.models import Disk, Run, RunSample
from tests.factories import DiskFactory, HostFactory, RunFactory, fio_summary

FIXTURES = Path(__file__).parent.parent / "fixtures"
FINISHED = datetime(2026, 11, 20, 8, 30, 15, tzinfo=UTC)


def _rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _api(user, team) -> Client:
    _, secret = ApiToken.issue(user, team, "exports")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


@pytest.fixture
def imported(disk) -> Run:
    """A real fio result, with the figures fio printed and per-second samples."""
    text = (FIXTURES / "fio-3.33-randrw-status-interval.json").read_text()
    return importing.import_result(disk, text, name="randrw.json", at=FINISHED)


def test_the_runs_csv_read_back_equals_the_runs_in_the_database(owner_client, disk, imported):
    failed = RunFactory(disk=disk, failed=True, profile_name="=cmd|' /C calc'!A0", warnings=["@SUM(1+1): odd"])
    rows = {int(row["run_id"]): row for row in _rows(owner_client.get(f"/runs/export.csv?disk={disk.pk}"))}
    assert set(rows) == {imported.pk, failed.pk}

    row, summary = rows[imported.pk], imported.summary
    assert row["state"] == "succeeded" and row["host"] == "vm1" and row["disk"] == "data"
    assert row["finished_at_utc"] == "2026-11-20T08:30:15Z"
    assert datetime.fromisoformat(row["started_at_utc"]) == imported.started_at
    assert float(row["read_iops"]) == summary["read"]["iops"]  # every digit stored
    assert float(row["write_bw_bytes_per_s"]) == summary["write"]["bw_bytes_per_s"]
    assert float(row["read_p99_us"]) == summary["read"]["clat_us"]["p99"]
    assert float(row["write_p99_9_us"]) == summary["write"]["clat_us"]["p99_9"]
    # As fio printed them, digits and unit.
    assert row["read_iops_printed"] == "19967.677441" and row["read_bw_printed"] == "79870 KiB/s"
    assert row["total_iops_printed"] == ""  # fio printed no total for this job
    assert row["rw"] == "randrw" and row["block_size_bytes"] == "4096"
    assert row["iodepth"] == ""  # the output does not say
    assert float(row["limit_iops"]) == 4000
    assert row["limit_source"] == "typed by hand in the disk's spec" and row["limit_source_url"] == ""
    assert float(row["efficiency_percent"]) == round(100 * summary["total"]["iops"] / 4000, 2)
    assert row["run_url"] == f"http://testserver/runs/{imported.pk}/"

    row = rows[failed.pk]
    assert row["state"] == "failed"
    # Nothing measured: empty cells, never 0.
    for column in ("read_iops", "total_iops", "read_p50_us", "limit_iops", "efficiency_percent", "steady_state"):
        assert row[column] == "", column
    # A person's text a spreadsheet would run as a formula gets an apostrophe; the number columns do not.
    assert row["profile"] == "'=cmd|' /C calc'!A0"
    assert row["warnings"] == "'@SUM(1+1): odd" and row["warning_count"] == "1"


# Typed text -> the cell a spreadsheet gets: a formula behind blanks, line breaks or fullwidth signs is defused.
DEFUSED = {
    " =1+1": "' =1+1",
    "\n=cmd|' /C calc'!A0": "'\n=cmd|' /C calc'!A0",
    "\r\n@SUM(1)": "'\r\n@SUM(1)",
    "\u00a0+1": "'\u00a0+1",
    "\u3000\u200b-1+2": "'\u3000\u200b-1+2",
    '\uff1dHYPERLINK("http://x")': '\'\uff1dHYPERLINK("http://x")',
    "\uff0b1": "'\uff0b1",
    "\uff0d1": "'\uff0d1",
    "\uff20A1": "'\uff20A1",
    "\tplain": "'\tplain",
    "-2+3": "'-2+3",
    "-42": "-42",  # a number is not a formula
    "-1.5e3": "-1.5e3",
    "+7": "+7",
    "a = b": "a = b",
}


def test_a_formula_behind_blanks_line_breaks_or_fullwidth_signs_is_defused_and_numbers_are_kept(owner_client, disk):
    runs = {RunFactory(disk=disk, failed=True, profile_name=typed).pk: written for typed, written in DEFUSED.items()}
    rows = {int(row["run_id"]): row for row in _rows(owner_client.get(f"/runs/export.csv?disk={disk.pk}"))}
    assert {pk: rows[pk]["profile"] for pk in runs} == runs


def test_a_limit_from_the_catalog_is_exported_with_its_source(owner_client, host):
    gp3 = Disk.objects.create(host=host, label="gp3", target_path="/data/gp3", disk_type="aws-gp3", size=500)
    run = RunFactory(disk=gp3, succeeded=True, limits_snapshot=gp3.limits(block_size=4096).as_dict())
    (row,) = _rows(owner_client.get(f"/runs/export.csv?disk={gp3.pk}"))
    source = run.limits_snapshot["source"]
    assert row["limit_source"] == run.limits_snapshot["record_id"] and row["limit_source"]
    assert row["limit_source_url"] == source["url"] and source["url"].startswith("https://")
    assert row["limit_source_date"] == source["date"]
    assert row["limit_verified"] == ("yes" if source["verified"] else "no")
    assert float(row["limit_iops"]) == 3000


def test_the_filename_names_the_disk_and_the_day(owner_client, disk, imported):
    response = owner_client.get(f"/runs/export.csv?disk={disk.pk}")
    today = timezone.now().astimezone(UTC).date().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="benchweb-runs-data-{today}.csv"'
    response = owner_client.get(f"/runs/{imported.pk}/samples.csv")
    day = imported.started_at.date().isoformat()
    expected = f'attachment; filename="benchweb-run-{imported.pk}-samples-data-{day}.csv"'
    assert response["Content-Disposition"] == expected


def test_the_api_export_takes_the_runs_list_filters(owner, team, disk, imported):
    RunFactory(disk=disk, failed=True)
    api = _api(owner, team)
    assert {row["state"] for row in _rows(api.get("/api/v1/runs/export.csv"))} == {"succeeded", "failed"}
    (row,) = _rows(api.get(f"/api/v1/runs/export.csv?disk={disk.pk}&state=succeeded"))
    assert int(row["run_id"]) == imported.pk
    assert _rows(api.get("/api/v1/runs/export.csv?finished_after=2026-11-21T00:00Z&state=succeeded")) == []
    assert len(_rows(api.get("/api/v1/runs/export.csv", HTTP_ACCEPT="text/csv"))) == 2


def test_a_bad_filter_is_refused_naming_the_parameter(owner, team, owner_client):
    api = _api(owner, team)
    refused = api.get("/api/v1/runs/export.csv?state=done")
    assert refused.status_code == 400 and "state" in refused.json()
    refused = api.get("/api/v1/runs/export.csv?ordering=state")
    assert refused.status_code == 400 and "takes no 'ordering'" in refused.json()["ordering"][0]
    refused = api.get("/api/v1/runs/export.csv?host=")
    assert refused.status_code == 400 and refused.json()["host"] == ["Give host a value, or leave the parameter out."]
    page = owner_client.get("/runs/export.csv?finished_after=yesterday")
    assert page.status_code == 400
    assert page.content.decode().startswith("Nothing was exported. Fix the filter and ask again: finished_after:")


def test_a_plain_request_is_401(disk, imported):
    assert Client().get("/api/v1/runs/export.csv").status_code == 401
    assert Client().get(f"/api/v1/runs/{imported.pk}/samples.csv").status_code == 401


@pytest.mark.parametrize("ask", [{"path": "?format=csv"}, {"path": "", "HTTP_ACCEPT": "text/csv"}, {"path": ""}])
def test_options_on_a_csv_export_describes_it_in_json_however_csv_is_asked_for(owner, team, imported, ask):
    api = _api(owner, team)
    api.raise_request_exception = False  # the 500 it once was, as a response
    headers = {name: value for name, value in ask.items() if name != "path"}
    for url in ("/api/v1/runs/export.csv", f"/api/v1/runs/{imported.pk}/samples.csv"):
        response = api.options(url + ask["path"], **headers)
        assert response.status_code == 200, response.content[:300]
        assert response["Content-Type"] == "application/json"
        assert "text/csv" in response.json()["renders"]


def test_a_format_the_exports_do_not_have_is_a_400_naming_the_parameter(owner, team, imported):
    api = _api(owner, team)
    for url in ("/api/v1/runs/export.csv", f"/api/v1/runs/{imported.pk}/samples.csv"):
        response = api.get(url + "?format=xml")
        assert response.status_code == 400
        assert response.json() == {"format": ["Give csv or json, not 'xml'."]}


def test_the_samples_csv_equals_the_stored_samples(owner, team, owner_client, imported):
    stored = list(RunSample.objects.filter(run=imported).order_by("t_s"))
    assert len(stored) == 3
    for response in (owner_client.get(f"/runs/{imported.pk}/samples.csv"),
                     _api(owner, team).get(f"/api/v1/runs/{imported.pk}/samples.csv")):  # fmt: skip
        rows = _rows(response)
        assert [float(row["t_s"]) for row in rows] == [s.t_s for s in stored]
        assert [float(row["read_iops"]) for row in rows] == [s.read_iops for s in stored]
        assert [float(row["write_iops"]) for row in rows] == [s.write_iops for s in stored]
        assert float(rows[0]["total_iops"]) == stored[0].read_iops + stored[0].write_iops
        at = datetime.fromisoformat(rows[1]["time_utc"])
        assert at == imported.started_at + timedelta(seconds=stored[1].t_s)


def test_another_teams_runs_are_404_and_left_out_of_the_export(owner, team, owner_client, imported):
    stranger = HostFactory()
    theirs = RunFactory(disk=DiskFactory(host=stranger), succeeded=True)
    assert owner_client.get(f"/runs/{theirs.pk}/samples.csv").status_code == 404
    api = _api(owner, team)
    assert api.get(f"/api/v1/runs/{theirs.pk}/samples.csv").status_code == 404
    rows = _rows(api.get("/api/v1/runs/export.csv"))
    assert [int(row["run_id"]) for row in rows] == [imported.pk]
    # Filtering by their disk finds nothing of theirs.
    assert _rows(api.get(f"/api/v1/runs/export.csv?disk={theirs.disk_id}")) == []


def test_an_export_of_many_runs_is_streamed_in_chunks(owner_client, disk, django_assert_max_num_queries):
    count = 3 * tables.CHUNK + 7
    start = timezone.now() - timedelta(days=30)
    Run.objects.bulk_create(
        RunFactory.build(disk=disk, state=Run.State.SUCCEEDED, summary=fio_summary(read_iops=1000.0 + i),
                         finished_at=start + timedelta(minutes=i))
        for i in range(count)
    )  # fmt: skip
    response = owner_client.get(f"/runs/export.csv?disk={disk.pk}")
    assert response.streaming and not response.has_header("Content-Length")
    pieces = iter(response.streaming_content)
    first = next(pieces)
    assert first.startswith(b"run_id,state,host,disk")
    # The rows leave as they are read, in pieces of a few hundred lines: a handful of queries for 6,000 runs
    # (chunks), not one per run.
    with django_assert_max_num_queries(8):
        rest = list(pieces)
    assert len(rest) > count // tables.LINES_A_WRITE - 2
    lines = b"".join([first, *rest]).split(b"\r\n")
    assert lines[-1] == b"" and len(lines[1:-1]) == count


def test_the_runs_page_filters_and_its_csv_link_carries_the_same_filters(owner_client, disk, imported):
    failed = RunFactory(disk=disk, failed=True)
    page = owner_client.get(f"/runs/?disk={disk.pk}&state=failed&trigger=&steady=").content.decode()
    assert f'href="/runs/{failed.pk}/"' in page and f'href="/runs/{imported.pk}/"' not in page
    link = re.search(r'href="(/runs/export\.csv\?[^"]*)" download', page).group(1).replace("&amp;", "&")
    assert link == f"/runs/export.csv?disk={disk.pk}&state=failed"  # the empty filters are left out
    assert [int(row["run_id"]) for row in _rows(owner_client.get(link))] == [failed.pk]


def test_the_runs_page_says_which_filter_is_wrong(owner_client, disk):
    page = owner_client.get("/runs/?state=done&finished_after=yesterday").content.decode()
    assert 'id="run-filter-errors"' in page and "state:" in page and "finished_after:" in page
    assert "export.csv" not in page
