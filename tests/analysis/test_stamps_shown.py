"""Every stamp where runs are compared (issue 16): the disk chart's points carry steady state and warnings and
the page brings the runs served from burst; Compare has rows for steady state, burst credits and warnings; the
API's runs list carries the steady-state stamp and filters on it. Constructed runs on a gp2 disk, whose bucket
arithmetic tests/analysis/test_burst.py checks."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.analysis import steady
from jobs.api.models import ApiToken
from jobs.models import Disk, Host, Run, RunResult
from jobs.results import series as chart_series
from jobs.results import validity
from tests.analysis.stamps import FRESH, NOT_STEADY, RQ, STEADY, finished
from tests.factories import RunFactory
from tests.openapi import schema

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


@pytest.fixture
def gp2(host: Host) -> Disk:
    return Disk.objects.create(host=host, label="gp2", target_path="/data/gp2", disk_type="aws-gp2", size=20)


@pytest.fixture
def history(gp2: Disk) -> dict[str, Run]:
    """Three runs (their replay: tests/analysis/test_burst.py): a full bucket serves a, b drains it part way through, c
    runs at the baseline. a is steady with one warning, b not steady with two, c was never stamped."""
    return {
        "a": finished(gp2, start=T0, seconds=600, iops=3000, steady_state=STEADY, warnings=[FRESH]),
        "b": finished(
            gp2,
            start=T0 + timedelta(seconds=4200),
            seconds=1800,
            iops=3000,
            steady_state=NOT_STEADY,
            warnings=[FRESH, RQ],
        ),
        "c": finished(gp2, start=T0 + timedelta(seconds=6600), seconds=600, iops=100),
    }


def _series(client: Client, disk: Disk, query: str = "range=all") -> dict[str, Any]:
    response = client.get(f"/disks/{disk.pk}/series.json?{query}")
    assert response.status_code == 200, response.content[:300]
    return response.json()


# ----------------------------------------------------------------------------------------- the disk chart


def _marks(client: Client, disk: Disk) -> dict[str, Any]:
    """What the disk page passes its chart (json_script "run-marks")."""
    response = client.get(f"/disks/{disk.pk}/")
    assert response.status_code == 200
    found = re.search(r'<script id="run-marks" type="application/json">(.*?)</script>', response.content.decode())
    assert found
    return json.loads(found.group(1))


def test_each_point_of_the_disk_series_carries_its_runs_steady_flag_and_warning_count(gp2, history, owner_client):
    (drawn,) = _series(owner_client, gp2)["series"]
    runs = [history[name].pk for name in "abc"]
    for points in (drawn["iops"]["total"], drawn["iops"]["read"], drawn["latency_us"]["read"]["p99"]):
        assert points["run"] == runs
        assert points["steady"] == [True, False, None]
        assert points["warnings"] == [1, 2, 0]


def test_day_drawn_points_carry_the_warning_count_in_the_same_query_as_the_steady_flag(gp2, owner_client, monkeypatch):
    monkeypatch.setattr(chart_series, "DAY_BUCKETS_ABOVE", 5)
    start = datetime.now(UTC) - timedelta(days=20)
    runs = [
        finished(gp2, start=start + timedelta(days=i), seconds=60, iops=100.0 + i, warnings=[RQ] * (i % 3))
        for i in range(12)
    ]
    with CaptureQueriesContext(connection) as queries:
        (drawn,) = _series(owner_client, gp2, "range=all&points=10")["series"]
    total = drawn["iops"]["total"]
    assert drawn["downsampled"] and 0 < len(total["run"]) < len(runs)
    by_id = {run.pk: len(run.warnings) for run in runs}
    assert total["warnings"] == [by_id[pk] for pk in total["run"]]
    # The points' flags come with their day rows, which keep each drawn run's steady flag and warning count side by
    # side (migration 0023): the result rows are not read again for them, and nothing is read per point.
    selects = [q["sql"].split(" FROM ")[0] for q in queries if '"jobs_runresult"' in q["sql"]]
    assert sum('"warning_count"' in s and '"steady"' in s and '"total_iops"' not in s for s in selects) == 0
    days = [q["sql"] for q in queries if "jobs_runresultday" in q["sql"]]
    assert any("_warnings" in sql and "_steady" in sql for sql in days), days
    assert len(queries) < len(runs)
    assert not any('"jobs_run"' in q["sql"] for q in queries)


def test_the_disk_page_brings_the_runs_served_from_burst_and_the_words_of_each_warning(gp2, history, owner_client):
    marks = _marks(owner_client, gp2)
    a, b = (str(history[name].pk) for name in "ab")
    # a starts on a full 5.4 M bucket; b on 4.02 M of it (74 %), which runs dry part way; c, at the baseline, is
    # not marked.
    assert marks["burst"] == {
        a: "served from burst (balance at start 5.4 M I/O credits, 100 %)",
        b: "partly from burst (balance at start 4.02 M I/O credits, 74 %)",
    }
    assert marks["warnings"] == {
        a: ["Fresh blocks"],
        b: ["Fresh blocks", "rq_affinity of nvme1n1 is 1, not 2 as the pinned recipe wants"],
    }


def test_the_disk_page_of_a_disk_without_a_bucket_marks_no_burst(disk, owner_client):
    finished(disk, start=T0, seconds=60, iops=3000, warnings=[RQ])
    marks = _marks(owner_client, disk)
    assert marks["burst"] == {} and list(marks["warnings"].values()) == [[validity.warning_head(RQ)]]


def test_a_warnings_head_is_its_words_up_to_the_first_colon_full_stop_or_semicolon_and_short():
    assert validity.warning_head(FRESH) == "Fresh blocks"
    assert validity.warning_head("/dev/sdb is not the disk registered. This read run measures …") == (
        "/dev/sdb is not the disk registered"
    )
    long = validity.warning_head("x" * 200)
    assert len(long) == validity.HEAD_CHARS and long.endswith("…")


def test_steady_words_read_an_unstamped_run_as_not_checked():
    assert [validity.steady_words(s) for s in (STEADY, NOT_STEADY, {"state": "not_checked"}, None)] == [
        "steady", "not steady", "not checked", "not checked",
    ]  # fmt: skip


def test_the_migration_counts_the_warnings_of_results_written_before_it(gp2, history):
    from importlib import import_module

    from django.apps import apps

    RunResult.objects.update(warning_count=0)
    import_module("jobs.migrations.0014_result_flags").count_warnings(apps, None)
    counts = dict(RunResult.objects.values_list("run_id", "warning_count"))
    assert counts == {history["a"].pk: 1, history["b"].pk: 2, history["c"].pk: 0}


# ----------------------------------------------------------------------------------------- Compare


def _rows(page: str) -> dict[str, list[str]]:
    """The side-by-side table's rows: label -> its cells' text, tags dropped."""
    rows = {}
    for label, cells in re.findall(r'<tr[^>]*><th scope="row">(.*?)</th>(.*?)</tr>', page, flags=re.S):
        texts = re.findall(r"<td[^>]*>(.*?)</td>", cells, flags=re.S)
        rows[label] = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", t)).split()) for t in texts]
    return rows


def test_compare_of_runs_shows_steady_state_burst_and_warnings_beside_the_results(gp2, history, owner_client):
    a, b, c = (history[name] for name in "abc")
    response = owner_client.get(f"/compare/?runs={a.pk},{b.pk},{c.pk}")
    assert response.status_code == 200
    rows = _rows(response.content.decode())
    assert list(rows)[:10] == [
        "Finished", "Measured IOPS", "Theoretical IOPS", "Efficiency", "Throughput efficiency", "Bandwidth",
        "Theoretical at its block size", "Steady state", "Burst credits", "Warnings",
    ]  # fmt: skip
    steady_cells = rows["Steady state"]
    assert steady_cells[0].startswith("steady Steady state: reached after 41 s (fio")
    assert steady_cells[1].startswith("not steady Not steady: the rounds' range is 31 %")
    assert steady_cells[2].startswith("not checked Not checked:")
    assert rows["Burst credits"] == [
        "served from burst balance at start 5.4 M I/O credits (100 %); judged against the burst limit",
        "partly from burst balance at start 4.02 M I/O credits (74.4 %); judged against the burst limit",
        # Idle 600 s after b emptied it: 60,000 credits (1.1 %).
        "baseline balance at start 60,000 I/O credits (1.1 %); judged against the baseline limit",
    ]
    assert rows["Warnings"] == [
        "1 warning Fresh blocks",
        "2 warnings Fresh blocks; rq_affinity of nvme1n1 is 1, not 2 as the pinned recipe wants",
        "none",
    ]


def test_compare_leaves_out_the_burst_row_where_no_disk_has_a_bucket(disk, owner_client):
    one = finished(disk, start=T0, seconds=60, iops=3000, steady_state=STEADY)
    two = finished(disk, start=T0 + timedelta(hours=1), seconds=60, iops=3000)
    rows = _rows(owner_client.get(f"/compare/?runs={one.pk},{two.pk}").content.decode())
    assert "Burst credits" not in rows
    assert [cell.split(" ")[0] for cell in rows["Steady state"]] == ["steady", "not"]
    assert rows["Warnings"] == ["none", "none"]


def test_compare_of_disks_shows_each_disks_last_run_stamp(gp2, history, disk, owner_client):
    finished(disk, start=T0, seconds=60, iops=3000, steady_state=NOT_STEADY)
    finished(disk, start=T0 + timedelta(hours=2), seconds=60, iops=3000, steady_state=STEADY, warnings=[RQ])
    rows = _rows(owner_client.get(f"/compare/?disks={gp2.pk},{disk.pk}").content.decode())
    # gp2's last run is c (never stamped, at the baseline); the other disk's is the steady one with a warning.
    assert [cell.split(" ")[0] for cell in rows["Steady state"]] == ["not", "steady"]
    assert rows["Steady state"][0].startswith("not checked")
    assert rows["Burst credits"][0].startswith("baseline") and rows["Burst credits"][1] == "—"
    assert rows["Warnings"] == ["none", "1 warning rq_affinity of nvme1n1 is 1, not 2 as the pinned recipe wants"]


# ----------------------------------------------------------------------------------------- the API


@pytest.fixture
def api(owner, team) -> Client:
    return Client(headers={"Authorization": f"Bearer {ApiToken.issue(owner, team, 'stamps')[1]}"})


def test_the_runs_list_carries_each_runs_steady_state_stamp(gp2, history, api):
    response = api.get(f"/api/v1/runs/?disk={gp2.pk}")
    assert response.status_code == 200
    stamps = {item["id"]: item["steady_state"] for item in response.json()["results"]}
    assert stamps == {history["a"].pk: STEADY, history["b"].pk: NOT_STEADY, history["c"].pk: None}


@pytest.mark.parametrize(("wanted", "names"), [("steady", "a"), ("not_steady", "b"), ("not_checked", "cdp")])
def test_the_runs_list_filters_on_the_steady_state_stamp(gp2, history, api, wanted, names):
    unjudged = {"state": steady.NOT_CHECKED, "by": "benchweb", "why": "too few samples"}
    history["d"] = finished(gp2, start=T0 + timedelta(days=1), seconds=60, iops=100, steady_state=unjudged)
    history["p"] = RunFactory(disk=gp2)  # pending: no stamp yet
    response = api.get(f"/api/v1/runs/?disk={gp2.pk}&steady={wanted}")
    assert response.status_code == 200
    assert {item["id"] for item in response.json()["results"]} == {history[name].pk for name in names}


def test_an_unknown_steady_filter_is_refused_naming_the_field_and_its_choices(gp2, api):
    response = api.get("/api/v1/runs/?steady=yes")
    assert response.status_code == 400
    body = json.dumps(response.json())
    assert "steady" in body and "yes" in body


def test_the_filtered_list_of_stamped_runs_answers_as_its_schema_says(gp2, history, owner, team,
                                                                      keep_the_test_connection):  # fmt: skip
    operation = schema["/api/v1/runs/"]["GET"]
    parameter = next(p for p in operation.definition.raw["parameters"] if p["name"] == "steady")
    assert parameter["schema"]["enum"] == ["steady", "not_steady", "not_checked"]
    headers = {"Authorization": f"Bearer {ApiToken.issue(owner, team, 'schema')[1]}"}
    for wanted, run in (("steady", history["a"]), ("not_steady", history["b"])):
        response = operation.Case(query={"steady": wanted}).call_and_validate(headers=headers)
        assert [item["steady_state"]["state"] for item in response.json()["results"]] == [wanted]
        assert response.json()["results"][0]["id"] == run.pk
