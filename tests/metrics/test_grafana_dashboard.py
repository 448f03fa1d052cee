"""The Grafana dashboard in docs/grafana/: every query it makes names series that a real /metrics scrape has,
filtered by the dashboard's team, host, disk and profile variables, from the Prometheus datasource input."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from jobs.metrics import workers
from jobs.models import Run
from tests.factories import ProfileFactory, RunFactory
from tests.metrics.scraping import finished, scrape, token_for

DASHBOARD = Path(__file__).resolve().parent.parent.parent / "docs/grafana/benchweb-dashboard.json"
METRIC = re.compile(r"\bbenchweb_[a-z0-9_]+")
# Series of the whole deployment, with no team label.
SHARED = {"benchweb_workers_answering", "benchweb_broker_up", "benchweb_scrape_duration_seconds"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def queries(board: dict) -> list[str]:
    """Every PromQL expression: the panels' targets and the variables' queries."""
    found = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    return found + [v["query"] for v in board["templating"]["list"]]


def test_every_query_filters_by_the_chosen_team_and_reads_the_datasource_input():
    board = dashboard()
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    assert [v["name"] for v in board["templating"]["list"]] == ["team", "host", "disk", "profile"]
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, panel["title"]
            assert panel["targets"], panel["title"]
    for expr in queries(board)[: -len(board["templating"]["list"])]:
        if not set(METRIC.findall(expr)) <= SHARED:
            assert 'team="$team"' in expr, expr
        if "benchweb_latest_run" in expr or "benchweb_compliance" in expr:
            assert 'host=~"$host",disk=~"$disk",profile=~"$profile"' in expr, expr


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_metric_the_dashboard_draws_is_in_a_real_scrape(team, host, disk, worker):
    profile = ProfileFactory(team=team, name="randread-4k")
    finished(disk, profile, timezone.now() - timedelta(hours=1), read_iops=3000.0, write_iops=500.0)
    RunFactory(disk=disk, state=Run.State.QUEUED, queued_at=timezone.now())
    workers.forget()  # ping the worker now, not an answer kept from an earlier test
    got = scrape(Client(), token_for(team, "grafana"))

    named = {name for expr in queries(dashboard()) for name in METRIC.findall(expr)}
    assert len(named) >= 12
    assert named - set(got) == set(), "the dashboard asks for series /metrics does not have"
    for name in named:
        assert got[name], f"{name} has no sample in the scrape"
