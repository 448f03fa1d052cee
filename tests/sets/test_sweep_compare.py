"""Sweeps compared curve on curve (jobs/sets/comparing.py): two disks' sweeps of one profile, each side's median
curve, every point's comparison and the knees', with the Compare page's statistics where each side has enough
sweeps, and the same parameter errors as Compare."""

from __future__ import annotations

import pytest

from jobs.analysis import stats
from jobs.results.stats import StatsError
from jobs.sets import comparing
from tests.factories import DiskFactory
from tests.sets.sweeps import run_sweep, sweep_profile

pytestmark = pytest.mark.django_db


def test_two_disks_sweeps_are_compared_point_by_point_and_by_their_knees(
    team, host, django_capture_on_commit_callbacks
):
    a, b = DiskFactory(host=host, label="old"), DiskFactory(host=host, label="new")
    profile = sweep_profile(team, name="QD sweep")
    for i in range(5):
        # Disk B levels off at about 80 % of A's IOPS.
        run_sweep(a, profile, [(1000 + i, 100), (1900 + i, 150), (2000 + i, 400)], django_capture_on_commit_callbacks)
        run_sweep(b, profile, [(1000 + i, 100), (1520 + i, 150), (1600 + i, 400)], django_capture_on_commit_callbacks)

    found = comparing.comparison(comparing.parse({"a_disk": str(a.pk), "b_disk": str(b.pk)}, team))

    assert found["profile"] == "QD sweep" and len(found["a"]["sweeps"]) == 5
    assert [p["label"] for p in found["points"]] == ["iodepth 1", "iodepth 4", "iodepth 16"]
    first, deep, deepest = found["points"]
    assert (deep["a"]["iops"], deep["b"]["iops"], deep["a"]["n"]) == (1902, 1522, 5)
    assert first["comparison"]["verdict"] == stats.NOT_SIGNIFICANT
    assert deep["comparison"]["verdict"] == deepest["comparison"]["verdict"] == stats.SIGNIFICANT
    assert deep["comparison"]["text"].startswith("B: new is 20 % slower than A: old (p = 0.0")
    assert found["knee"]["verdict"] == stats.SIGNIFICANT
    assert [c["knee_text"] for c in found["curves"]["a"]] == ["knee at QD 4: 1,902 IOPS, p99 150 µs"]
    assert [c["knee_text"] for c in found["curves"]["b"]] == ["knee at QD 4: 1,522 IOPS, p99 150 µs"]


def test_too_few_sweeps_say_so_instead_of_a_verdict(team, host, django_capture_on_commit_callbacks):
    a, b = DiskFactory(host=host), DiskFactory(host=host)
    profile = sweep_profile(team)
    run_sweep(a, profile, [(1000, 100), (1900, 150), (2000, 400)], django_capture_on_commit_callbacks)
    run_sweep(b, profile, [(1000, 100), (1500, 300), (1600, 400)], django_capture_on_commit_callbacks)

    found = comparing.comparison(comparing.parse({"a_disk": str(a.pk), "b_disk": str(b.pk)}, team))

    assert found["points"][1]["comparison"]["verdict"] == stats.NOT_ENOUGH
    assert found["points"][1]["comparison"]["text"].startswith("Not enough runs to tell")


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({}, "disk", "Give a_disk and b_disk"),
        ({"a_disk": "x", "b_disk": "1"}, "a_disk", "takes a disk's id"),
        ({"disk": "{a}", "split": "soon"}, "split", "split takes an ISO date"),
        ({"disk": "{a}", "split": "2026-11-20", "test": "t"}, "test", "is not a test"),
        ({"disk": "{a}", "split": "2026-11-20"}, "profile", "None of these disks has a finished sweep yet"),
    ],
)
def test_a_bad_parameter_is_named_with_the_fix(team, host, params, field, words):
    disk = DiskFactory(host=host)
    params = {key: value.replace("{a}", str(disk.pk)) for key, value in params.items()}
    with pytest.raises(StatsError, match=words) as refused:
        comparing.parse(params, team)
    assert refused.value.field == field
