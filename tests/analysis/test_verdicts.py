"""The verdict engine on synthetic seconds: each rule firing and not, its sentence, a team's thresholds changing
the outcome, and a clean run judged as having measured the disk."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.analysis import verdicts
from jobs.analysis.verdicts import DEFAULT_THRESHOLDS, RunFacts, judge

FAST = settings(max_examples=200, deadline=None, database=None)
PLAIN = {"device": "vdb", "members": []}
CLEAN = RunFacts(direct=True, rw="randread", size_bytes=10 * 2**30, jobs=1, iops=5000.0, bytes_per_s=5000 * 4096.0,
                 runtime_s=60.0, fio_usr_percent=2.5, fio_sys_percent=8.1)  # fmt: skip
# fio using 70 % of a CPU per job: a saturated CPU can be its own.
HEAVY = dataclasses.replace(CLEAN, fio_usr_percent=30.0, fio_sys_percent=40.0)


def second(t: int, *, busy: float = 30.0, cpu: int = 0, steal: float = 0.0, devices: dict | None = None,
           pressure: dict | None = None) -> dict[str, Any]:  # fmt: skip
    sample: dict[str, Any] = {
        "t": 1_700_000_000.0 + t,
        "cpu": {"user": 10.0, "system": 10.0, "iowait": 5.0, "steal": steal, "idle": 75.0,
                "busiest": {"cpu": cpu, "busy": busy}},
        "memory": {"total_bytes": 8 * 2**30, "available_bytes": 6 * 2**30, "cached_bytes": 2**30, "dirty_bytes": 0},
        "load1": 1.0,
        "devices": devices if devices is not None else {"vdb": disk(util=60.0, queue=0.9, iops=5000.0)},
    }  # fmt: skip
    if pressure is not None:
        sample["pressure"] = pressure
    return sample


def disk(*, util: float, queue: float = 1.0, iops: float = 5000.0, await_ms: float = 0.2) -> dict[str, float]:
    return {"read_iops": iops, "write_iops": 0.0, "read_mb_s": iops * 4096 / 1e6, "write_mb_s": 0.0,
            "queue": queue, "await_ms": await_ms, "util": util}  # fmt: skip


def kinds(found: list[verdicts.Verdict]) -> list[str]:
    return [verdict["kind"] for verdict in found]


def test_a_clean_direct_run_measured_the_disk():
    assert judge([second(t) for t in range(60)], PLAIN, CLEAN) == []


def test_no_seconds_and_nothing_known_says_nothing():
    bare = RunFacts(direct=None, rw="randread", size_bytes=None, jobs=1, iops=None, bytes_per_s=None, runtime_s=None)
    assert judge([], {"device": None, "members": []}, bare) == []


# client-bound


def test_a_cpu_saturated_while_the_device_idles_is_client_bound_with_its_evidence():
    seconds = [second(t, busy=99.0 if t < 58 else 40.0, cpu=3, devices={"vdb": disk(util=41.0)}) for t in range(60)]

    [verdict] = judge(seconds, PLAIN, HEAVY)

    assert (
        verdict["text"] == "client-bound: CPU 3 was 99 % busy for 58 of 60 s while the device (vdb) was 41 % utilised"
    )
    assert verdict["evidence"] == {"device": "vdb", "device_util_percent": 41.0, "cpu": 3, "cpu_busy_percent": 99.0,
                                   "saturated_s": 58, "seconds": 60}  # fmt: skip


def test_a_saturation_that_moves_between_cpus_names_the_most_frequent():
    seconds = [second(t, busy=98.0, cpu=1 if t % 4 else 2, devices={"vdb": disk(util=10.0)}) for t in range(40)]
    [verdict] = judge(seconds, PLAIN, HEAVY)
    assert verdict["text"].startswith("client-bound: a CPU (CPU 1 most often) was 98 % busy for 40 of 40 s")


def test_a_busy_device_is_not_client_bound_even_with_a_saturated_cpu():
    seconds = [second(t, busy=99.0, devices={"vdb": disk(util=85.0)}) for t in range(60)]
    assert verdicts.CLIENT_BOUND not in kinds(judge(seconds, PLAIN, CLEAN))


def test_a_cpu_saturated_for_less_than_the_share_is_not_client_bound():
    seconds = [second(t, busy=99.0 if t < 40 else 50.0) for t in range(60)]  # 67 % of the seconds
    assert judge(seconds, PLAIN, HEAVY) == []
    lenient = judge(seconds, PLAIN, HEAVY, {"client_share_percent": 60})
    assert kinds(lenient) == [verdicts.CLIENT_BOUND] and "40 of 60 s" in lenient[0]["text"]


def test_a_cpu_kept_busy_by_another_program_is_not_the_clients_unless_fios_cpu_is_unknown():
    seconds = [second(t, busy=99.0, cpu=1, devices={"vdb": disk(util=20.0)}) for t in range(30)]
    # fio printed 10.6 % of a CPU: the saturated CPU is another program's.
    assert verdicts.CLIENT_BOUND not in kinds(judge(seconds, PLAIN, CLEAN))
    assert kinds(judge(seconds, PLAIN, CLEAN, {"client_fio_share_percent": 10})) == [verdicts.CLIENT_BOUND]
    unknown = dataclasses.replace(CLEAN, fio_usr_percent=None, fio_sys_percent=None)
    assert kinds(judge(seconds, PLAIN, unknown)) == [verdicts.CLIENT_BOUND]


def test_fios_own_cpu_per_job_makes_it_client_bound_when_the_host_reported_seconds():
    run = dataclasses.replace(CLEAN, jobs=4, fio_usr_percent=38.2, fio_sys_percent=59.9)
    seconds = [second(t, devices={"vdb": disk(util=30.0)}) for t in range(20)]

    [verdict] = judge(seconds, PLAIN, run)

    assert verdict["text"] == (
        "client-bound: fio used 98 % of a CPU for each of its 4 jobs (usr 38.2 % + sys 59.9 %) "
        "while the device (vdb) was 30 % utilised"
    )
    assert judge([], PLAIN, run) == []  # nothing says the device was not the limit


def test_with_no_block_device_the_cpu_alone_makes_it_client_bound_and_says_so():
    seconds = [second(t, busy=100.0, cpu=0, devices={}) for t in range(30)]
    [verdict] = judge(seconds, {"device": None, "members": []}, HEAVY)
    assert verdict["text"] == "client-bound: CPU 0 was 100 % busy for 30 of 30 s while no block device was reported"


def test_fewer_seconds_than_the_minimum_judge_nothing_on_seconds():
    seconds = [second(t, busy=99.0, devices={"vdb": disk(util=5.0)}) for t in range(9)]
    assert judge(seconds, PLAIN, HEAVY) == []
    assert kinds(judge(seconds, PLAIN, HEAVY, {"min_seconds": 5})) == [verdicts.CLIENT_BOUND]


# cache suspected


def test_buffered_io_is_cache_suspected_without_any_seconds():
    [verdict] = judge([], PLAIN, dataclasses.replace(CLEAN, direct=False))
    assert verdict == {"kind": "cache_suspected", "text": "cache suspected: buffered I/O (direct=0) goes through the "
                       "page cache", "evidence": {"direct": False}}  # fmt: skip


def test_a_test_size_under_25_times_the_bandwidth_is_cache_suspected():
    run = dataclasses.replace(CLEAN, size_bytes=2**30, jobs=2, bytes_per_s=200 * 2**20)  # 2 GiB < 25 × 200 MiB

    [verdict] = judge([], PLAIN, run)

    assert verdict["text"] == (
        "cache suspected: the test size 2 GiB (2 jobs × 1 GiB) is under 25× the measured 200 MiB/s (4.88 GiB)"
    )
    assert verdict["evidence"] == {"test_size_bytes": 2**31, "bytes_per_s": 200 * 2**20, "size_bandwidth_ratio": 25}
    assert judge([], PLAIN, run, {"cache_size_bandwidth_ratio": 10}) == []  # 2 GiB ≥ 10 × 200 MiB
    assert judge([], PLAIN, dataclasses.replace(run, size_bytes=0)) == []  # fio's whole device: size not known


def test_reads_above_the_physical_limit_are_cache_suspected_and_the_promise_stands_in_when_it_is_unknown():
    above_physical = dataclasses.replace(CLEAN, iops=60_000.0, bytes_per_s=None, physical_iops=50_000.0,
                                         limit_iops=20_000.0)  # fmt: skip
    [verdict] = judge([], PLAIN, above_physical)
    assert (
        verdict["text"]
        == "cache suspected: reads of 60,000 IOPS are 20 % above the disk's physical limit of 50,000 IOPS"
    )
    assert verdict["evidence"]["limit_kind"] == "physical"

    bursting = dataclasses.replace(above_physical, iops=30_000.0)  # above the promise, under the device: a burst
    assert judge([], PLAIN, bursting) == []
    promised_only = dataclasses.replace(bursting, physical_iops=None)
    assert "above the disk's promised limit of 20,000 IOPS" in judge([], PLAIN, promised_only)[0]["text"]
    assert judge([], PLAIN, dataclasses.replace(promised_only, rw="randrw")) == []  # writes count in the total


def test_reads_within_the_margin_of_the_limit_are_no_cache():
    run = dataclasses.replace(CLEAN, iops=21_000.0, bytes_per_s=None, limit_iops=20_000.0)  # 5 % above
    assert judge([], PLAIN, run) == []
    assert kinds(judge([], PLAIN, run, {"cache_above_limit_percent": 2})) == [verdicts.CACHE_SUSPECTED]


def test_every_cache_reason_is_in_one_sentence():
    run = dataclasses.replace(CLEAN, direct=False, size_bytes=2**20, bytes_per_s=100 * 2**20)
    [verdict] = judge([], PLAIN, run)
    assert verdict["text"].startswith("cache suspected: buffered I/O (direct=0) goes through the page cache; the test")


# device saturated


def test_a_device_busy_every_second_with_a_long_queue_is_saturated():
    seconds = [second(t, devices={"vdb": disk(util=99.5, queue=31.7)}) for t in range(60)]
    [verdict] = judge(seconds, PLAIN, CLEAN)
    assert verdict["text"] == (
        "device saturated: the device (vdb) was at least 98 % utilised for 60 of 60 s and its queue averaged 31.7"
    )


def test_a_device_busy_with_a_growing_queue_is_saturated():
    seconds = [second(t, devices={"vdb": disk(util=100.0, queue=0.5 + t / 40)}) for t in range(60)]
    [verdict] = judge(seconds, PLAIN, CLEAN)
    assert "its queue grew from 0.7 to 1.7" in verdict["text"]
    assert verdict["evidence"]["queue_mean"] < DEFAULT_THRESHOLDS["saturated_queue_high"]


def test_a_busy_device_with_a_short_steady_queue_or_a_device_busy_only_some_seconds_is_not_saturated():
    short_queue = [second(t, devices={"vdb": disk(util=99.0, queue=1.0)}) for t in range(60)]
    some_seconds = [second(t, devices={"vdb": disk(util=99.0 if t % 2 else 60.0, queue=8.0)}) for t in range(60)]
    assert judge(short_queue, PLAIN, CLEAN) == []
    assert judge(some_seconds, PLAIN, CLEAN) == []
    assert kinds(judge(short_queue, PLAIN, CLEAN, {"saturated_queue_high": 1})) == [verdicts.DEVICE_SATURATED]


# throttled at the promise


def throttled_seconds(util: float = 35.0) -> list[dict[str, Any]]:
    return [second(t, devices={"vdb": disk(util=util, iops=3000.0 + (t % 3) * 10)}) for t in range(60)]


def test_iops_flat_at_the_limit_while_the_device_is_not_busy_is_the_clouds_cap():
    run = dataclasses.replace(CLEAN, iops=2990.0, limit_iops=3000.0)

    [verdict] = judge(throttled_seconds(), PLAIN, run)

    assert verdict["kind"] == "throttled_at_promise"
    assert verdict["text"] == (
        "throttled at the promise: 2,990 IOPS held within 0.3 % of the disk's limit of 3,000 IOPS, flat to 0.3 % "
        "second by second, while the device (vdb) was 35 % utilised: the cloud's cap, expected"
    )


def test_a_number_off_the_limit_an_unsteady_one_or_a_busy_device_is_not_throttled():
    at_limit = dataclasses.replace(CLEAN, iops=2990.0, limit_iops=3000.0)
    assert judge(throttled_seconds(), PLAIN, dataclasses.replace(at_limit, iops=2500.0)) == []
    jumpy = [second(t, devices={"vdb": disk(util=35.0, iops=3000.0 if t % 2 else 2000.0)}) for t in range(60)]
    assert judge(jumpy, PLAIN, at_limit) == []
    assert judge(throttled_seconds(util=96.0), PLAIN, at_limit) == []
    assert kinds(judge(throttled_seconds(util=96.0), PLAIN, at_limit, {"throttle_device_util_percent": 100})) == [
        verdicts.THROTTLED_AT_PROMISE
    ]
    assert judge([], PLAIN, at_limit) == []  # no seconds: nothing says the device was not the limit


# stripe imbalance

STRIPE = {"device": "dm-3", "members": ["vdb", "vdc", "vdd", "vde"]}


def stripe_seconds(slow: dict[str, float]) -> list[dict[str, Any]]:
    members = {name: disk(util=48.0, await_ms=3.1) for name in STRIPE["members"]}
    members["vdd"] = disk(**slow)
    return [second(t, devices={"dm-3": disk(util=60.0), **members}) for t in range(30)]


def test_one_member_far_busier_than_the_others_is_a_stripe_imbalance():
    [verdict] = judge(stripe_seconds({"util": 97.0, "await_ms": 12.4}), STRIPE, CLEAN)
    assert verdict["text"] == (
        "stripe imbalance: vdd was 97 % utilised, await 12.40 ms against a median of 48 % utilised, await 3.10 ms "
        "for the other 3 members of dm-3"
    )
    assert [m["member"] for m in verdict["evidence"]["members"]] == ["vdd"]


def test_a_member_slow_in_await_alone_is_a_stripe_imbalance():
    assert kinds(judge(stripe_seconds({"util": 50.0, "await_ms": 9.0}), STRIPE, CLEAN)) == [verdicts.STRIPE_IMBALANCE]


def test_members_close_to_one_another_or_a_plain_disk_are_no_stripe_imbalance():
    close = stripe_seconds({"util": 62.0, "await_ms": 3.5})  # 1.3 x and +14 points, not 1.5 x and +20
    assert judge(close, STRIPE, CLEAN) == []
    assert judge(close, STRIPE, CLEAN, {"stripe_ratio": 1.2, "stripe_util_points": 10})
    assert judge(stripe_seconds({"util": 97.0}), {"device": "dm-3", "members": ["vdd"]}, CLEAN) == []


# host under pressure


def test_cpu_pressure_or_steal_in_a_share_of_the_seconds_is_host_under_pressure():
    pressured = [second(t, pressure={"io_some": 95.0, "cpu_some": 44.0 if t < 20 else 1.0, "memory_some": 0.0})
                 for t in range(60)]  # fmt: skip
    [verdict] = judge(pressured, PLAIN, CLEAN)
    assert (
        verdict["text"] == "host under pressure: CPU pressure (PSI some) was at least 10 % in 20 of 60 s, at most 44 %"
    )

    stolen = [second(t, steal=12.0) for t in range(60)]
    assert judge(stolen, PLAIN, CLEAN)[0]["evidence"] == {"steal": {"high_s": 60, "seconds": 60, "max_percent": 12.0}}
    assert judge(stolen, PLAIN, CLEAN, {"steal_percent": 15}) == []


def test_io_pressure_from_the_benchmark_itself_is_no_host_pressure():
    seconds = [second(t, pressure={"io_some": 99.0, "io_full": 90.0, "cpu_some": 0.5}) for t in range(60)]
    assert judge(seconds, PLAIN, CLEAN) == []


# thresholds


def test_a_teams_thresholds_are_checked_naming_the_key_and_the_fix():
    problems = verdicts.threshold_problems({"cpu_busy": 90, "client_cpu_busy_percent": 120,
                                            "stripe_ratio": "lots", "steal_percent": 5})  # fmt: skip
    assert problems["cpu_busy"].startswith("cpu_busy: there is no such threshold; the thresholds are min_seconds, ")
    assert problems["client_cpu_busy_percent"] == (
        "client_cpu_busy_percent: 120 is above 100; give a number from 50 to 100 %, e.g. 95 (the default)."
    )
    assert problems["stripe_ratio"] == (
        "stripe_ratio: 'lots' is not a number; give a number from 1 to 100 × the median, e.g. 1.5 (the default)."
    )
    assert "steal_percent" not in problems
    assert verdicts.threshold_problems({"saturated_util_percent": True})  # a checkbox's True is no 1


def test_merged_thresholds_keep_the_defaults_where_a_team_has_none_or_a_stale_one():
    merged = verdicts.merged_thresholds({"steal_percent": 8, "gone_key": 3, "min_seconds": -1})
    assert merged == DEFAULT_THRESHOLDS | {"steal_percent": 8.0}


def test_every_verdict_has_a_label_and_every_threshold_a_rule():
    assert verdicts.verdict_names()[0] == ("client_bound", "client-bound")
    assert {kind for kind, _ in verdicts.verdict_names()} == set(verdicts.LABELS)
    assert {t.kind for t in verdicts.THRESHOLDS} == {"", *verdicts.LABELS}
    assert all(t.low <= t.default <= t.high for t in verdicts.THRESHOLDS)


def test_the_user_guide_lists_every_threshold_with_its_default():
    page = (Path(__file__).parents[2] / "docs" / "user-guide" / "verdicts.md").read_text()
    for threshold in verdicts.THRESHOLDS:
        row = re.search(rf"^\| `{threshold.key}` \|.*$", page, re.MULTILINE)
        assert row, f"{threshold.key} is not in docs/user-guide/verdicts.md"
        assert f"| {threshold.default:g} |" in row.group(0), row.group(0)


# properties


@FAST
@given(
    busy=st.lists(st.floats(0, 100), min_size=10, max_size=120),
    util=st.floats(0, 100),
    busy_at=st.floats(50, 100),
    share=st.floats(1, 100),
)
def test_client_bound_fires_exactly_when_enough_seconds_are_saturated_and_the_device_is_idle(
    busy, util, busy_at, share
):
    seconds = [second(t, busy=b, devices={"vdb": disk(util=util)}) for t, b in enumerate(busy)]
    limits = {"client_cpu_busy_percent": busy_at, "client_share_percent": share}

    found = verdicts.CLIENT_BOUND in kinds(judge(seconds, PLAIN, HEAVY, limits))

    saturated = sum(1 for b in busy if b >= busy_at)
    fio_saturated = HEAVY.fio_usr_percent + HEAVY.fio_sys_percent >= busy_at  # fio's own 70 % of a CPU
    enough = saturated >= share / 100 * len(busy) or fio_saturated
    expected = enough and util < DEFAULT_THRESHOLDS["client_device_util_percent"]
    assert found == expected


@FAST
@given(
    size=st.integers(1, 2**40),
    jobs=st.integers(1, 64),
    bandwidth=st.floats(1, 2**34),
    ratio=st.floats(1, 1000),
)
def test_the_test_size_rule_is_kbenchs_inequality(size, jobs, bandwidth, ratio):
    run = dataclasses.replace(CLEAN, size_bytes=size, jobs=jobs, bytes_per_s=bandwidth)
    found = judge([], PLAIN, run, {"cache_size_bandwidth_ratio": ratio})
    assert bool(found) == (size * jobs < ratio * bandwidth)


@FAST
@given(st.dictionaries(st.sampled_from(list(DEFAULT_THRESHOLDS)), st.floats(allow_nan=True, allow_infinity=True)))
def test_a_thresholds_dict_is_either_accepted_whole_or_its_problems_named(values):
    problems = verdicts.threshold_problems(values)
    merged = verdicts.merged_thresholds(values)
    for key, value in values.items():
        threshold = verdicts.THRESHOLD_BY_KEY[key]
        in_range = threshold.low <= value <= threshold.high  # NaN is never in range
        assert (key in problems) == (not in_range)
        assert merged[key] == (value if in_range else threshold.default)
        if key in problems:
            assert problems[key].startswith(f"{key}: ") and f"e.g. {threshold.default:g} (the default)" in problems[key]
