"""Burst credits: the bucket model against the vendors' published arithmetic, a disk's history replayed, the
knee of a run's series, efficiency against the limit that applied, and the disk page, run page and API that
show them. The history is built with the ORM: runs of known IOPS and runtimes at known times."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from jobs import limits
from jobs.api.models import ApiToken
from jobs.limits.burst import Bucket, Usage, bucket_for, replay
from jobs.limits.knee import find_knee
from jobs.models import Disk, Host, Run, RunResult, RunSample
from jobs.results import burst
from jobs.runs import queueing
from tests.browser import assert_fits, log_in, settle
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.factories import RunFactory, fio_summary
from tests.openapi import schema

MiB, GiB, TiB = 2**20, 2**30, 2**40
T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def bucket(disk_type: str, size: float, stripes: int = 1) -> Bucket:
    found = bucket_for(limits.evaluate(limits.Spec(disk_type, size, stripes=stripes)))
    assert isinstance(found, Bucket), found
    return found


# ----------------------------------------------------------------------------- the model


def test_a_20_gib_gp2_from_a_full_bucket_runs_about_1862_s_at_3000_iops():
    gp2 = bucket("aws-gp2", 20)
    # The published figures: 5.4 M I/O credits, earned at the baseline of 3 IOPS/GiB (floor 100), 3,000 at burst.
    assert (gp2.metric, gp2.capacity, gp2.refill_per_s, gp2.burst_per_s) == ("iops", 5_400_000, 100, 3000)
    # 5,400,000 / (3,000 - 100) = 1,862.07 s.
    assert gp2.lasts(gp2.capacity) == pytest.approx(1862.07, abs=0.01)
    # Replayed: a run of 1,800 s at 3,000 IOPS leaves 5,400,000 - 2,900 x 1,800 = 180,000 credits ...
    (short,) = replay(gp2, [Usage(1, 0.0, 1800.0, 3000.0, 3000.0 * 16384)])
    assert (short.end_balance, short.label) == (180_000, "burst")
    # ... and one of 1,900 s runs the bucket dry after 1,862 s: partly from burst.
    (long,) = replay(gp2, [Usage(2, 0.0, 1900.0, 3000.0, None)])
    assert (long.end_balance, long.label) == (0, "partly")
    assert long.dry_after_s == pytest.approx(1862.07, abs=0.01)


def test_a_gp2_stripe_set_has_a_bucket_per_volume_and_lasts_as_long():
    pair = bucket("aws-gp2", 20, stripes=2)
    assert (pair.capacity, pair.refill_per_s, pair.burst_per_s) == (10_800_000, 200, 6000)
    assert pair.lasts(pair.capacity) == pytest.approx(1862.07, abs=0.01)


def test_st1_and_sc1_credits_are_bytes_one_tib_per_tib_and_each_io_spends_at_least_1_mib():
    st1 = bucket("aws-st1", 1024)
    assert (st1.metric, st1.capacity, st1.refill_per_s, st1.burst_per_s) == ("throughput", TiB, 40 * MiB, 250 * MiB)
    # 1 TiB / (250 - 40) MiB/s = 1,048,576 / 210 = 4,993.2 s.
    assert st1.lasts(st1.capacity) == pytest.approx(4993.22, abs=0.01)
    # 100 random 4 KiB reads a second move 400 KiB/s but spend 100 MiB/s of credit, 60 MiB/s over the baseline.
    assert st1.spend_per_s(100.0, 100.0 * 4096) == 100 * MiB
    assert st1.lasts(st1.capacity, st1.spend_per_s(100.0, 100.0 * 4096)) == pytest.approx(TiB / (60 * MiB))
    # 4 MiB sequential I/O spends its size: 50 I/Os a second at 4 MiB are 200 MiB/s.
    assert st1.spend_per_s(50.0, 50.0 * 4 * MiB) == 200 * MiB
    # A run measured at 1,000 MiB/s (a cache served most of it) drains at most the 250 MiB/s the disk can burst.
    (cached,) = replay(st1, [Usage(1, 0.0, 1000.0, 1000.0, 1000.0 * MiB)])
    assert cached.spend_per_s == 250 * MiB and cached.end_balance == TiB - 210 * MiB * 1000
    sc1 = bucket("aws-sc1", 1024)
    # 12 MiB/s baseline, 80 MiB/s burst: 1,048,576 / 68 = 15,420.2 s.
    assert (sc1.capacity, sc1.refill_per_s, sc1.burst_per_s) == (TiB, 12 * MiB, 80 * MiB)
    assert sc1.lasts(sc1.capacity) == pytest.approx(15420.24, abs=0.01)
    # 2 TiB of st1: a 2 TiB bucket, 80 MiB/s baseline, burst capped at 500 MiB/s: 2,097,152 / 420 = 4,993.2 s.
    big = bucket("aws-st1", 2048)
    assert (big.capacity, big.refill_per_s, big.burst_per_s) == (2 * TiB, 80 * MiB, 500 * MiB)
    assert big.lasts(big.capacity) == pytest.approx(4993.22, abs=0.01)


def test_azure_credit_bursting_is_a_bucket_of_30_minutes_above_the_baseline():
    p10 = bucket("azure-premium-ssd", 128)
    # P10: 500 IOPS, bursting to 3,500 for 30 minutes: 1,800 x (3,500 - 500) = 5,400,000 I/Os.
    assert (p10.capacity, p10.refill_per_s, p10.burst_per_s) == (5_400_000, 500, 3500)
    assert p10.lasts(p10.capacity) == pytest.approx(1800)


@pytest.mark.parametrize(
    ("disk_type", "size", "why"),
    [
        ("azure-premium-ssd", 1024, "P30 bursts on demand"),
        ("aws-gp3", 100, "aws-gp3 does not burst"),
        ("aws-gp2", 1000, "baseline already reaches its burst rate"),
    ],
)
def test_types_without_a_credit_bucket_say_why(disk_type, size, why):
    found = bucket_for(limits.evaluate(limits.Spec(disk_type, size)))
    assert isinstance(found, str) and why in found


# ----------------------------------------------------------------------------- a disk's history


@pytest.fixture
def gp2(host: Host) -> Disk:
    return Disk.objects.create(host=host, label="gp2", target_path="/data/gp2", disk_type="aws-gp2", size=20)


def finished_run(disk: Disk, *, start: datetime, seconds: float, iops: float, state: str = "succeeded") -> Run:
    """A run that did `iops` 4 KiB random reads for `seconds` from `start`, as fio would report it. Like a real
    run it was started a few seconds before its I/O (the preflight, laying out the file): the replay goes by the
    runtime fio printed."""
    summary = fio_summary(read_iops=iops) | {"runtime_s": seconds}
    run = RunFactory(
        disk=disk,
        state=state,
        started_at=start - timedelta(seconds=7),
        finished_at=start + timedelta(seconds=seconds),
        summary=summary,
        limits_snapshot=disk.limits_snapshot(block_size=4096),
    )
    RunResult.record(run)
    return run


def test_a_disks_runs_are_replayed_in_time_order_to_predict_each_start_balance_and_the_balance_now(gp2):
    a = finished_run(gp2, start=T0, seconds=600, iops=3000)
    # Out of order on purpose: the replay goes by time, not by id.
    c = finished_run(gp2, start=T0 + timedelta(seconds=6600), seconds=600, iops=100)
    b = finished_run(gp2, start=T0 + timedelta(seconds=4200), seconds=1800, iops=3000)
    # A failed run did I/O nobody measured: it is not counted.
    finished_run(gp2, start=T0 + timedelta(seconds=7300), seconds=60, iops=3000, state=Run.State.FAILED)
    now = T0 + timedelta(seconds=7200 + 3600)

    found = burst.disk_burst(gp2, now=now)
    by_run = {p.run_id: p for p in found.passages}
    assert [p.run_id for p in found.passages] == [a.pk, b.pk, c.pk]
    # a: starts full (a new volume), spends (3,000 - 100) x 600 = 1,740,000: 3,660,000 left.
    assert (by_run[a.pk].start_balance, by_run[a.pk].end_balance, by_run[a.pk].label) == (5_400_000, 3_660_000, "burst")
    # Idle 3,600 s: + 360,000 = 4,020,000 at b's start; b would spend 2,900 x 1,800 = 5,220,000, so the bucket ran
    # dry 4,020,000 / 2,900 = 1,386.2 s in: partly from burst.
    assert (by_run[b.pk].start_balance, by_run[b.pk].end_balance, by_run[b.pk].label) == (4_020_000, 0, "partly")
    assert by_run[b.pk].dry_after_s == pytest.approx(1386.21, abs=0.01)
    # Idle 600 s: + 60,000 at c's start; c at 100 IOPS earns what it spends: baseline, still 60,000.
    assert (by_run[c.pk].start_balance, by_run[c.pk].end_balance, by_run[c.pk].label) == (60_000, 60_000, "baseline")
    # Now, 3,600 s after c: 60,000 + 360,000 = 420,000 (7.8 %); full in (5,400,000 - 420,000) / 100 = 49,800 s;
    # a full-speed run now lasts 420,000 / 2,900 = 144.8 s.
    state = found.now()
    assert state is not None
    assert (state["balance"], state["percent"], state["refill_seconds"]) == (420_000, 7.8, 49_800)
    assert state["full_speed_seconds"] == pytest.approx(144.8, abs=0.1)
    exhausts = datetime.fromisoformat(state["exhausts_at"])
    assert (exhausts - now).total_seconds() == pytest.approx(420_000 / 2900, abs=0.01)


def test_the_replay_starts_full_after_a_pause_long_enough_to_refill_an_empty_bucket(gp2):
    finished_run(gp2, start=T0, seconds=3600, iops=3000)  # empties the bucket
    # An empty gp2 bucket of a 20 GiB volume refills in 5,400,000 / 100 = 54,000 s (15 h); 16 h later:
    later = finished_run(gp2, start=T0 + timedelta(hours=17), seconds=600, iops=3000)
    found = burst.disk_burst(gp2, now=T0 + timedelta(hours=18))
    assert [p.run_id for p in found.passages] == [later.pk]
    assert found.passages[0].start_balance == 5_400_000
    assert f"run {later.pk}" in found.full_from and "idle" in found.full_from


# ----------------------------------------------------------------------------- the knee


def noisy(levels: list[float], seed: int = 16) -> list[float]:
    """Each level with 3 % of Gaussian noise, the same on every run of the test."""
    draw = random.Random(seed)
    return [level * (1 + draw.gauss(0, 0.03)) for level in levels]


def test_a_drop_from_3000_to_100_iops_at_1200_s_is_found_within_a_few_seconds():
    times = list(range(1, 1801))
    values = noisy([3000.0 if t <= 1200 else 100.0 for t in times])
    knee = find_knee(times, values, baseline=100, burst=3000)
    assert knee is not None
    assert abs(knee.at_s - 1200) <= 3
    assert knee.high == pytest.approx(3000, rel=0.02) and knee.low == pytest.approx(100, rel=0.02)


@pytest.mark.parametrize(
    ("levels", "reason"),
    [
        ([3000.0] * 1800, "flat at the burst level"),
        ([100.0] * 1800, "flat at the baseline"),
        ([100.0] * 600 + [3000.0] * 1200, "a rise is no knee"),
        ([3000.0] * 1200 + [1500.0] * 600, "falls, but not to the baseline"),
    ],
)
def test_no_knee_where_the_series_does_not_fall_from_burst_to_baseline(levels, reason):
    times = list(range(1, len(levels) + 1))
    assert find_knee(times, noisy(levels), baseline=100, burst=3000) is None, reason


def test_a_runs_knee_is_reported_against_the_models_prediction(gp2, owner_client):
    run = finished_run(gp2, start=T0, seconds=1800, iops=2033.33)  # (3,000 x 1,200 + 100 x 600) / 1,800
    levels = noisy([3000.0 if t <= 1200 else 100.0 for t in range(1, 1801)])
    RunSample.objects.bulk_create(RunSample(run=run, t_s=t, read_iops=v) for t, v in enumerate(levels, start=1))

    facts = burst.run_burst(run)
    assert facts is not None and facts["knee"] is not None
    assert abs(facts["knee"]["measured_burst_s"] - 1200) <= 3
    # From a full bucket at the measured burst level (about 3,000): 5,400,000 / (3,000 - 100) ≈ 1,862 s.
    assert facts["knee"]["predicted_burst_s"] == pytest.approx(1862, rel=0.03)

    page = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-burst-knee"' in page and "the model predicted" in page


# ----------------------------------------------------------------------------- efficiency, pages, API


def test_efficiency_is_judged_against_the_limit_that_applied(gp2, owner_client):
    at_baseline = finished_run(gp2, start=T0, seconds=600, iops=95)
    on_burst = finished_run(gp2, start=T0 + timedelta(hours=1), seconds=600, iops=2940)

    baseline_facts, burst_facts = burst.run_burst(at_baseline), burst.run_burst(on_burst)
    assert baseline_facts and burst_facts
    assert (baseline_facts["limit_applied"], baseline_facts["efficiency_percent"]) == ("baseline", 95.0)
    assert (burst_facts["limit_applied"], burst_facts["efficiency_percent"]) == ("burst", 98.0)

    page = owner_client.get(f"/runs/{at_baseline.pk}/").content.decode()
    assert "95 % of the baseline, the limit that applied" in page
    page = owner_client.get(f"/runs/{on_burst.pk}/").content.decode()
    assert "98 % of the burst limit, which applied (2,940 % of baseline)" in page
    assert "served from burst" in page


def test_the_disk_page_shows_the_predicted_balance_and_each_runs_label(gp2, owner_client):
    first = finished_run(gp2, start=T0, seconds=600, iops=3000)
    quiet = finished_run(gp2, start=T0 + timedelta(hours=1), seconds=600, iops=100)
    page = owner_client.get(f"/disks/{gp2.pk}/").content.decode()
    assert 'id="disk-burst"' in page
    # Long since the last run (T0 is in the past): full again.
    assert "5.4 M I/O credits" in page and "(100.0 % of the bucket)" in page
    assert "now: the bucket is full" in page
    assert "would run on burst for ≈ 31 min" in page
    labels = page.split('id="disk-burst"')[1]
    assert labels.count("served from burst") >= 1 and "burst-label" in labels
    assert f"#{first.pk}" in page and f"#{quiet.pk}" in page


def test_a_disk_without_a_credit_bucket_shows_nothing_of_it(disk, owner_client):
    page = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    assert 'id="disk-burst"' not in page and "burst-label" not in page


@pytest.fixture
def api(owner, team) -> Client:
    client = Client(headers={"Authorization": f"Bearer {ApiToken.issue(owner, team, 'burst')[1]}"})
    return client


def test_the_api_gives_a_disks_model_balance_and_runs_and_a_runs_burst_object(gp2, api):
    first = finished_run(gp2, start=T0, seconds=600, iops=3000)
    answer = api.get(f"/api/v1/disks/{gp2.pk}/burst/").json()
    assert answer["model"]["capacity"] == 5_400_000 and answer["model"]["metric"] == "iops"
    assert answer["model"]["full_bucket_seconds"] == pytest.approx(1862.1)
    assert answer["why"] is None and answer["now"]["percent"] == 100.0
    (run,) = answer["runs"]
    assert (run["run"], run["start_balance"], run["end_balance"], run["label"]) == (
        first.pk,
        5_400_000,
        3_660_000,
        "burst",
    )
    detail = api.get(f"/api/v1/runs/{first.pk}/").json()
    assert detail["burst"]["label"] == "burst" and detail["burst"]["limit_applied"] == "burst"
    assert detail["burst"]["start_balance"] == 5_400_000


def test_the_api_says_why_a_disk_has_no_model(disk, api):
    answer = api.get(f"/api/v1/disks/{disk.pk}/burst/").json()
    assert answer["model"] is None and "custom has limits typed by hand" in answer["why"] and answer["runs"] == []


def test_the_burst_answers_match_their_schema(gp2, owner, team, keep_the_test_connection):
    first = finished_run(gp2, start=T0, seconds=600, iops=3000)
    headers = {"Authorization": f"Bearer {ApiToken.issue(owner, team, 'schema')[1]}"}
    for path, id_ in (("/api/v1/disks/{id}/burst/", gp2.pk), ("/api/v1/runs/{id}/", first.pk)):
        case = schema[path]["GET"].Case(path_parameters={"id": id_})
        response = case.call_and_validate(headers=headers)
        assert response.status_code == 200 and response.json()["id" if "runs/" in path else "model"]


# ----------------------------------------------------------------------------- real runs


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_real_fio_runs_over_ssh_are_replayed_from_what_fio_printed(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="gp2", target_path=target_dir(tmp_path), disk_type="aws-gp2", size=20)
    profile = quick_profile(team, extra_options={})  # unthrottled: it reads above gp2's 3,000 IOPS
    first = wait_final(queueing.request_run(disk, profile))
    second = wait_final(queueing.request_run(disk, profile))
    assert (first.state, second.state) == (Run.State.SUCCEEDED, Run.State.SUCCEEDED), second.explanation

    found = burst.disk_burst(disk)
    assert [p.run_id for p in found.passages] == [first.pk, second.pk]
    one, two = RunResult.objects.get(run=first), RunResult.objects.get(run=second)
    runtime_one, runtime_two = first.summary["runtime_s"], second.summary["runtime_s"]
    # fio on a tmpfs file reads far above gp2's 3,000 IOPS from the page cache: the disk could have spent at most
    # its full speed, so the first run drains (3,000 - 100) x its runtime from a full bucket; the second starts
    # with what is left plus 100 credits a second for the pause between them.
    assert one.total_iops > 3000 and two.total_iops > 3000
    spent = (3000 - 100) * runtime_one
    pause = (two.finished_at.timestamp() - runtime_two) - one.finished_at.timestamp()
    assert found.passages[0].start_balance == 5_400_000
    assert found.passages[0].end_balance == pytest.approx(5_400_000 - spent)
    assert found.passages[1].start_balance == pytest.approx(min(5_400_000, 5_400_000 - spent + 100 * pause))
    assert [p.label for p in found.passages] == ["burst", "burst"]
    facts = burst.run_burst(second)
    assert facts is not None and facts["start_balance"] == round(found.passages[1].start_balance, 1)
    assert facts["limit_applied"] == "burst"


# ----------------------------------------------------------------------------- in a real browser


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_burst_cards_fit_a_phone_and_a_desktop_screen(screen, gp2, owner, request, live_server, screenshot):
    now = datetime.now(UTC)
    finished_run(gp2, start=now - timedelta(hours=3), seconds=600, iops=3000)
    run = finished_run(
        gp2, start=now - timedelta(hours=1), seconds=1800, iops=2033.33
    )  # (3,000 x 1,200 + 100 x 600) / 1,800
    levels = noisy([3000.0 if t <= 1200 else 100.0 for t in range(1, 1801)])
    RunSample.objects.bulk_create(RunSample(run=run, t_s=t, read_iops=v) for t, v in enumerate(levels, start=1))
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    for name, path, card in (("disk", f"/disks/{gp2.pk}/", "#disk-burst"), ("run", f"/runs/{run.pk}/", "#run-burst")):
        page.goto(live_server.url + path)
        settle(page)
        screenshot(name, on=page)
        assert_fits(page, name)
        assert page.locator(card).is_visible()
    assert "the model predicted" in page.locator("#run-burst-knee").inner_text()
    assert not page.js_errors
