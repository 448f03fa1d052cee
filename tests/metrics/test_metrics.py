"""GET /metrics: a Prometheus scrape with a team's API token, parsed with prometheus_client's own parser, holds
the numbers of the database's latest runs; no token, a wrong one or another team's see nothing of the team."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import requests
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchweb.celery import app
from jobs import messages
from jobs.alerts import evaluate, lifecycle
from jobs.api.models import ApiToken
from jobs.metrics import workers
from jobs.models import Alert, Disk, Run, RunResult
from jobs.results import compliance
from jobs.runs import queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final, wait_state
from tests.factories import DiskFactory, HostFactory, ProfileFactory, RunFactory, TeamFactory
from tests.metrics.scraping import finished, parse, scrape, token_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_ping():
    """Each test pings the workers afresh (the answer is otherwise kept for 15 s in this process)."""
    workers.forget()
    yield
    workers.forget()


def series(team, host, disk, profile, **more) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"team": team.name, "host": host.name, "disk": disk.label, "profile": profile, **more}.items()))


def test_the_latest_run_of_each_disk_and_profile_is_scraped_as_the_database_holds_it(team, host, disk):
    randread = ProfileFactory(team=team, name="randread-4k")
    mixed = ProfileFactory(team=team, name="randrw-4k")
    now = timezone.now()
    finished(disk, randread, now - timedelta(days=2), read_iops=3000.0)
    latest = finished(disk, randread, now - timedelta(hours=3), read_iops=3500.0)
    latest_mixed = finished(disk, mixed, now - timedelta(hours=1), read_iops=1000.0, write_iops=600.0)
    bare = DiskFactory(host=host, label="scratch")  # no limits: no efficiency, no limit
    on_bare = finished(bare, randread, now - timedelta(minutes=5), read_iops=800.0)

    got = scrape(Client(), token_for(team, "prom"))

    result = RunResult.objects.get(run=latest)
    labels = series(team, host, disk, "randread-4k")
    assert got["benchweb_latest_run_iops"][labels] == result.total_iops == 3500.0
    assert got["benchweb_latest_run_bandwidth_bytes_per_second"][labels] == result.bw_bytes_per_s == 3500 * 4096
    assert got["benchweb_latest_run_p99_latency_seconds"][series(team, host, disk, "randread-4k", direction="read")] \
        == pytest.approx(result.read_p99_us / 1e6)  # fmt: skip
    # A read-only workload measured no write latency: left out, not 0.
    p99 = got["benchweb_latest_run_p99_latency_seconds"]
    assert series(team, host, disk, "randread-4k", direction="write") not in p99
    assert got["benchweb_latest_run_limit_iops"][labels] == result.limit_iops == 4000
    assert got["benchweb_latest_run_efficiency_ratio"][labels] == pytest.approx(3500 / 4000)
    finished_at = got["benchweb_latest_run_finished_timestamp_seconds"][labels]
    assert finished_at == pytest.approx(latest.finished_at.timestamp())

    mixed_labels = series(team, host, disk, "randrw-4k")
    assert got["benchweb_latest_run_iops"][mixed_labels] == RunResult.objects.get(run=latest_mixed).total_iops == 1600.0
    assert got["benchweb_latest_run_p99_latency_seconds"][series(team, host, disk, "randrw-4k", direction="write")] \
        == pytest.approx(0.0009)  # fmt: skip

    bare_labels = series(team, host, bare, "randread-4k")
    assert got["benchweb_latest_run_iops"][bare_labels] == RunResult.objects.get(run=on_bare).total_iops == 800.0
    assert bare_labels not in got["benchweb_latest_run_efficiency_ratio"]
    assert bare_labels not in got["benchweb_latest_run_limit_iops"]
    # One series per disk and profile: the older randread run is not there.
    assert len(got["benchweb_latest_run_iops"]) == 3


def test_compliance_over_30_days_matches_the_disk_pages_card(team, host, disk):
    profile = ProfileFactory(team=team, name="randread-4k")
    now = timezone.now()
    for days, iops in ((1, 4000.0), (2, 3000.0), (3, 3900.0), (4, 1000.0), (40, 100.0)):  # the last is too old
        finished(disk, profile, now - timedelta(days=days), read_iops=iops)

    got = scrape(Client(), token_for(team, "prom"))

    card = compliance.disk_compliance(disk, compliance.parse({"period": "30d"}, now=now))
    labels = series(team, host, disk, "randread-4k")
    assert got["benchweb_compliance_runs"][labels] == card["runs"] == 4
    assert got["benchweb_compliance_below_ratio"][labels] == card["below_share"] == 0.5


@pytest.mark.django_db(transaction=True)
def test_unresolved_alerts_by_kind_and_state(team, host, disk, owner):
    failed = RunFactory(disk=disk, failed=True, profile_name="4k read")
    evaluate.run_finished(failed.pk)  # opens one run_failed alert (after commit: this test commits)
    key = (("kind", "run_failed"), ("state", "open"), ("team", team.name))

    got = scrape(Client(), token_for(team, "prom"))["benchweb_alerts"]
    assert got[key] == 1
    assert got[(("kind", "stale"), ("state", "open"), ("team", team.name))] == 0  # a count: 0 is a value
    lifecycle.acknowledge(Alert.objects.get(team=team), owner)
    got = scrape(Client(), token_for(team, "prom2"))["benchweb_alerts"]
    assert got[key] == 0
    assert got[(("kind", "run_failed"), ("state", "acknowledged"), ("team", team.name))] == 1


def test_runs_by_state_and_the_waits_of_due_runs(team, host, disk):
    now = timezone.now()
    other = DiskFactory(host=host)
    RunFactory(disk=disk, failed=True)
    RunFactory(disk=disk, failed=True)
    RunFactory(disk=disk, state=Run.State.QUEUED, queued_at=now - timedelta(seconds=90))
    RunFactory(disk=other, not_before=now - timedelta(seconds=300))  # due five minutes ago, waits
    RunFactory(disk=other, not_before=now + timedelta(hours=1))  # not due yet: pending, but not waiting

    got = scrape(Client(), token_for(team, "prom"))

    runs = got["benchweb_runs"]
    assert runs[(("state", "failed"), ("team", team.name))] == 2
    assert runs[(("state", "pending"), ("team", team.name))] == 2
    assert runs[(("state", "succeeded"), ("team", team.name))] == 0  # a count, so 0 is a value
    assert got["benchweb_waiting_runs"][(("state", "pending"), ("team", team.name))] == 1
    assert got["benchweb_waiting_runs"][(("state", "queued"), ("team", team.name))] == 1
    oldest = got["benchweb_oldest_waiting_run_seconds"]
    assert 300 <= oldest[(("state", "pending"), ("team", team.name))] < 330
    assert 90 <= oldest[(("state", "queued"), ("team", team.name))] < 120


def test_a_scrape_without_a_token_or_with_a_wrong_one_is_refused_with_401(team, disk):
    finished(disk, ProfileFactory(team=team), timezone.now())
    good = token_for(team, "prom")
    client = Client()
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer bw_nope_nope"}, {"HTTP_AUTHORIZATION": good[:-2]},
                    {"HTTP_AUTHORIZATION": f"Basic {good}"}, {"HTTP_AUTHORIZATION": "Bearer"}):  # fmt: skip
        response = client.get("/metrics", **headers)
        assert response.status_code == 401, headers
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b"benchweb_" not in response.content
        assert response.content.strip(), "the answer says what was wrong"
    assert b"Authorization: Bearer <token>" in client.get("/metrics").content  # says what to send


def test_a_revoked_token_is_refused_saying_so(team, disk):
    value = token_for(team, "prom")
    ApiToken.objects.get().revoke()
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {value}")
    assert response.status_code == 401 and b"revoked" in response.content


def test_another_teams_token_sees_only_its_own_team(team, host, disk):
    profile = ProfileFactory(team=team, name="randread-4k")
    finished(disk, profile, timezone.now())
    RunFactory(disk=disk, failed=True)
    other_team = TeamFactory(name="rivals")
    other_disk = DiskFactory(host=HostFactory(team=other_team, name="their-vm"), label="their-disk")
    finished(other_disk, ProfileFactory(team=other_team, name="theirs"), timezone.now(), read_iops=99.0)

    theirs = scrape(Client(), token_for(other_team, "rival-prom"))
    text = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token_for(other_team, 'rival-2')}").content.decode()

    teams_seen = {dict(labels).get("team") for values in theirs.values() for labels in values} - {None}
    assert teams_seen == {"rivals"}
    for label in (f'team="{team.name}"', f'host="{host.name}"', f'disk="{disk.label}"'):
        assert label not in text
    assert list(theirs["benchweb_latest_run_iops"].values()) == [99.0]


@pytest.mark.parametrize("metrics_token", ["a-long-server-wide-scrape-token-0123456789"])
def test_the_servers_metrics_token_scrapes_every_team(settings, team, disk, metrics_token):
    settings.METRICS_TOKEN = metrics_token
    finished(disk, ProfileFactory(team=team), timezone.now())
    other_team = TeamFactory(name="rivals")
    finished(DiskFactory(host=HostFactory(team=other_team)), ProfileFactory(team=other_team), timezone.now())

    got = scrape(Client(), metrics_token)

    assert {dict(labels)["team"] for labels in got["benchweb_latest_run_iops"]} == {team.name, "rivals"}
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token}x").status_code == 401


def test_the_number_of_queries_does_not_grow_with_the_disks(team, host):
    profiles = [ProfileFactory(team=team, name=f"p{i}") for i in range(3)]
    token = token_for(team, "prom")

    def queries() -> int:
        workers.forget()
        with CaptureQueriesContext(connection) as captured:
            scrape(Client(), token)
        return len(captured)

    def add_disks(n: int) -> None:
        for _ in range(n):
            disk = DiskFactory(host=host, with_limits=True)
            for profile in profiles:
                finished(disk, profile, timezone.now())

    add_disks(2)
    queries()  # the first use of the token writes its last_used_at (once a minute)
    few = queries()
    add_disks(8)
    queries()  # new disks: the runs by state are counted afresh once (jobs/metrics/tally.py)
    assert queries() == few
    assert len(scrape(Client(), token)["benchweb_latest_run_iops"]) == 30


def test_an_unreachable_broker_is_reported_down_and_no_worker_count_is_made_up(team, tmp_path):
    was = app.conf.broker_url
    app.conf.broker_url = f"redis+socket://{tmp_path / 'no-redis.sock'}"
    try:
        got = scrape(Client(), token_for(team, "prom"))
    finally:
        app.conf.broker_url = was
    assert got["benchweb_broker_up"][()] == 0
    assert "benchweb_workers_answering" not in got


def test_one_ping_answers_the_scrapes_of_the_next_15_seconds(monkeypatch):
    first = workers.seen()
    assert workers.seen() is first
    monkeypatch.setattr(workers.time, "time", lambda: first.at + workers.PING_EVERY)
    assert workers.seen().at == first.at + workers.PING_EVERY


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_live_server_scraped_over_http_reports_a_real_fio_run_and_the_worker_that_ran_it(
    fio_installed, sshd, worker, live_server, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom",
                               spec_iops=50000)  # fmt: skip
    run = wait_state(queueing.request_run(disk, quick_profile(team, runtime_s=6)), Run.State.RUNNING)
    # While it runs, the worker that watches it says so, with its load (jobs/metrics/load.py).
    watching = _load_while(lambda loads: any(answer.get("runs_watched", 0) >= 1 for answer in loads.values()))
    run = wait_final(run)
    assert run.state == Run.State.SUCCEEDED, run.explanation

    answer = requests.get(f"{live_server.url}/metrics", headers={"Authorization": f"Bearer {token_for(team, 'p')}"},
                          timeout=30)  # fmt: skip
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    got = parse(answer.text)

    result = RunResult.objects.get(run=run)
    labels = series(team, host, disk, "quick randread")
    assert got["benchweb_latest_run_iops"][labels] == result.total_iops > 100
    assert got["benchweb_latest_run_bandwidth_bytes_per_second"][labels] == result.bw_bytes_per_s
    read_p99 = got["benchweb_latest_run_p99_latency_seconds"][
        series(team, host, disk, "quick randread", direction="read")
    ]
    assert read_p99 == pytest.approx(result.read_p99_us / 1e6)
    assert got["benchweb_latest_run_efficiency_ratio"][labels] == pytest.approx(result.total_iops / 50000)
    assert got["benchweb_runs"][(("state", "succeeded"), ("team", team.name))] == 1
    assert got["benchweb_broker_up"][()] == 1 and got["benchweb_workers_answering"][()] >= 1
    assert any(dict(labels)["worker"].startswith("test0-") for labels in got["benchweb_worker_up"])
    assert requests.get(f"{live_server.url}/metrics", timeout=30).status_code == 401
    name, load = next((name, load) for name, load in watching.items() if load["runs_watched"] >= 1)
    assert load["threads"] >= 1 and 0 <= load["threads_busy"] <= load["threads"], load
    assert load["rss_bytes"] > 20 * 2**20 and 0 <= load["cpu_ratio"] and 0 <= load["headroom_ratio"] <= 1, load
    # The scrape gives each worker's figures as gauges.
    worker = (("worker", name),)
    if worker in got["benchweb_worker_threads"]:  # the scrape's own ping came after the run: the same worker
        assert got["benchweb_worker_threads"][worker] == load["threads"]
        assert 0 <= got["benchweb_worker_headroom_ratio"][worker] <= 1


def _load_while(condition, timeout: float = 20) -> dict:
    """The workers' answers to the load question, once they meet `condition`."""
    deadline = time.monotonic() + timeout
    while True:
        loads = messages.ask_workers(messages.LOAD, 1.0)
        if condition(loads) or time.monotonic() > deadline:
            return loads
        time.sleep(0.5)


SERVER_TOKEN = "a-server-wide-token-for-the-stack-test-0123456789"


@pytest.fixture
def server_token(monkeypatch) -> str:
    """BENCHWEB_METRICS_TOKEN in the environment the `stack` fixture (./bw run) starts with."""
    monkeypatch.setenv("BENCHWEB_METRICS_TOKEN", SERVER_TOKEN)
    return SERVER_TOKEN


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_run_command_serves_metrics_to_its_token_and_reports_its_own_worker(server_token, request):
    _, _, port, _ = request.getfixturevalue("stack")  # ./bw run, started with server_token in its environment
    url = f"http://127.0.0.1:{port}/metrics"
    assert requests.get(url, timeout=30).status_code == 401
    deadline = time.monotonic() + 60
    while True:  # the stack's worker may still be starting; a web process keeps a ping's answer 15 s
        answer = requests.get(url, headers={"Authorization": f"Bearer {server_token}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        got = parse(answer.text)
        if got.get("benchweb_workers_answering", {}).get((), 0) >= 1:
            break
        assert time.monotonic() < deadline, answer.text
        time.sleep(2)
    assert got["benchweb_broker_up"][()] == 1
    assert 0 < got["benchweb_scrape_duration_seconds"][()] < 5
