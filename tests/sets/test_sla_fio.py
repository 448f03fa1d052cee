"""A latency-target search end to end on this machine: real fio over the real sshd, a real Celery worker and Redis
(issue 31's "done when"): the target set from a first measurement at QD 1, the search's answer, and that rate run
again meeting the target; and a search that steps its rate cap down to the lowest rate.

The workload is 4k random reads with O_DIRECT through libaio, at QD 1, on a 16 MiB file of the test directory
(the machine's own disk), 2 s a step. The percentile is the median. This machine shares two cores with other test
sessions (load average 5 to 9 while this was written), and what it measures says where a search can be tested:
- over 2 s runs at QD 1 its p99 ranged from 0.2 ms to 3.4 ms from one run to the next, while the median stayed
  within 31-58 µs: a p99 target would test the neighbours, not the search;
- with a deeper queue, a rate cap does not lower the latency here: fio wakes late from its pacing sleep and
  sends the I/Os it owes in a burst, so at QD 16 capped at 2,000 IOPS the median was 208-371 µs, above the
  160-200 µs of QD 16 unthrottled; and without O_DIRECT the median jumps between ~1 µs and ~1 ms at a rate
  that moved by a third between two runs. A bracket found on either does not hold when run again.
So the search is proven on synthetic curves (tests/analysis/test_sla_search.py) and step by step on the set
machinery (test_sla_hold.py); here it runs with real fio where its answer can be checked again."""

from __future__ import annotations

import pytest

from jobs.models import Disk, Run, RunSet
from jobs.runs import queueing
from jobs.sets import requesting, searching
from tests.builders import quick_profile, target_dir, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PERCENTILE = "p50"
# The run of the found rate again may measure its median this much above the target: the medians of 2 s runs at
# QD 1 here spread from 31 to 58 µs, a factor of 1.9 between the extremes, so about 1.4 around their middle.
TOLERANCE = 1.5


def direct_reads(team, **fields):
    return quick_profile(team, ioengine="libaio", direct=True, runtime_s=2, **fields)


def qd1_target(disk, team) -> int:
    """Twice the median of a first run at QD 1, in µs."""
    qd1 = wait_final(queueing.request_run(disk, direct_reads(team, name="qd 1")))
    assert qd1.state == Run.State.SUCCEEDED, qd1.explanation
    return round(2 * searching.latency_of(qd1.summary, PERCENTILE))


def test_the_search_answers_a_target_set_from_qd_1_and_its_rate_meets_it_when_run_again(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    target_us = qd1_target(disk, team)

    profile = direct_reads(team, name="sla", sla_percentile=PERCENTILE, sla_target_us=target_us, sla_max_runs=6)
    run_set = wait_final(requesting.request_set(disk, profile), timeout=180)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    steps, answer = run_set.result["steps"], run_set.result["answer"]
    assert 1 <= len(steps) <= 6 and answer["iops"] is not None, run_set.result["answer_text"]
    assert answer["latency_us"] <= target_us and answer["iops"] > 0
    assert run_set.result["answer_text"].endswith(f"IOPS at p50 ≤ {target_us} µs")

    again = direct_reads(team, name="again", extra_options={"rate_iops": str(answer["rate_iops"])})
    rerun = wait_final(queueing.request_run(disk, again))
    assert rerun.state == Run.State.SUCCEEDED, rerun.explanation
    assert searching.latency_of(rerun.summary, PERCENTILE) <= TOLERANCE * target_us, (target_us, steps)


def test_a_target_below_the_disk_steps_the_cap_down_to_the_lowest_rate_and_says_none_met(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = direct_reads(team, name="sla", sla_percentile=PERCENTILE, sla_target_us=1, sla_max_runs=4)

    run_set = wait_final(requesting.request_sla(disk, profile), timeout=120)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    unthrottled, lowest = run_set.members.order_by("set_index")
    steps = run_set.result["steps"]
    assert [s["verdict"] for s in steps] == ["over target", "over target"]
    # The second step ran capped at a twentieth of the first's IOPS: fio's job file says so, and fio held it.
    assert steps[1]["rate_iops"] == max(1, round(round(steps[0]["iops"]) / 20))
    assert f"rate_iops={steps[1]['rate_iops']}" in lowest.command
    assert "rate_iops" not in unthrottled.command
    assert steps[1]["iops"] == pytest.approx(steps[1]["rate_iops"], rel=0.1)
    assert run_set.result["answer_text"].startswith(f"none met: at the lowest rate, {steps[1]['rate_iops']:,} IOPS")
