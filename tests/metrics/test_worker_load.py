"""A worker's load and headroom (jobs/metrics/load.py): what one minute of samples says, computed as the worker
answers /metrics. The live answer of a real worker is in tests/metrics/test_metrics.py."""

from __future__ import annotations

import time

import pytest

from jobs.metrics import load


def test_the_cpu_ratio_is_cpu_seconds_per_wall_second_between_the_first_and_last_sample():
    assert load.cpu_ratio([]) is None and load.cpu_ratio([(10.0, 1.0)]) is None
    assert load.cpu_ratio([(0.0, 1.0), (30.0, 7.0), (60.0, 13.0)]) == 0.2
    assert load.cpu_ratio([(0.0, 5.0), (60.0, 5.0)]) == 0.0


@pytest.mark.parametrize(
    ("ratio", "busy", "threads", "left"),
    [(0.2, 1, 8, 0.8), (0.2, 6, 8, 0.25), (1.3, 1, 8, 0.0), (None, 2, 8, 0.75), (None, 0, 0, None), (0.5, 0, 0, 0.5)],
)
def test_the_headroom_is_what_is_left_of_the_tighter_of_one_core_and_the_threads(ratio, busy, threads, left):
    assert load.headroom(ratio, busy, threads) == left


def test_the_answer_counts_the_runs_of_hosts_watched_lately_and_the_cpu_per_run_minute():
    meter = load.Meter()
    for second, cpu in ((0.0, 10.0), (30.0, 13.0), (60.0, 16.0)):  # 0.1 of a core
        meter.sample(now=second, cpu_seconds=cpu)
    meter.note_watched(1, 8, now=55.0)
    meter.note_watched(2, 2, now=50.0)
    meter.note_watched(3, 40, now=10.0)  # its last step is older than WATCHED_FRESH_S: no longer counted
    answer = meter.answer(threads_busy=2, threads=8, now=60.0)
    assert answer["cpu_ratio"] == 0.1 and answer["runs_watched"] == 10
    assert answer["cpu_seconds_per_run_minute"] == pytest.approx(60 * 0.1 / 10)
    assert answer["headroom_ratio"] == 0.75 and answer["threads_busy"] == 2
    assert answer["rss_bytes"] > 2**20
    assert meter.answer(threads_busy=0, threads=8, now=200.0)["cpu_seconds_per_run_minute"] is None


def test_a_live_answer_ends_its_window_with_this_processs_real_cpu_time():
    meter = load.Meter()
    meter.sample()
    started = time.monotonic()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # burn 0.3 s of CPU
        pass
    ratio = meter.answer(threads_busy=0, threads=1)["cpu_ratio"]
    assert ratio == pytest.approx(0.3 / (time.monotonic() - started), rel=0.3)
