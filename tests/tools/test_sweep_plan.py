"""A sweep's plan (jobs/tools/sweep_plan.py): the axes typed as lists and ranges, the grid of points, its time
against the team's bound, and the built-in sweeps' plans. Pure functions: no database."""

from __future__ import annotations

import itertools

import pytest
from django.core.validators import MaxValueValidator, MinValueValidator
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.models import Profile
from jobs.presets import SWEEP_PRESETS
from jobs.tools import sweep_plan
from jobs.tools.sweep_plan import KINDS, SweepError, check_bound, format_axis, make_plan, parse_axis, plan_text
from jobs.units import parse_size, short_size
from tests.tools.profiles import fio_profile, ndisk_profile

FAST = settings(max_examples=200, deadline=None, database=None)
KIB, MIB = 1024, 1024**2


@pytest.mark.parametrize(
    ("field", "text", "values"),
    [
        ("iodepth", "1,2,4,16", (1, 2, 4, 16)),
        ("iodepth", " 16, 4 ,1 ", (16, 4, 1)),
        ("jobs", "1-4 x2", (1, 2, 4)),
        ("iodepth", "1-256 x2", (1, 2, 4, 8, 16, 32, 64, 128, 256)),
        ("iodepth", "1 - 256 × 2", (1, 2, 4, 8, 16, 32, 64, 128, 256)),
        ("iodepth", "2-54x3", (2, 6, 18, 54)),
        ("read_percent", "10-90 +20", (10, 30, 50, 70, 90)),
        ("read_percent", "100%,70%,0%", (100, 70, 0)),
        ("block_size_bytes", "4k,64k,1M", (4 * KIB, 64 * KIB, MIB)),
        ("block_size_bytes", "512,4KiB", (512, 4 * KIB)),
        ("block_size_bytes", "4k-1M x4", (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB)),
        ("block_size_bytes", "4k-16k +4k", (4 * KIB, 8 * KIB, 12 * KIB, 16 * KIB)),
    ],
)
def test_it_reads_lists_in_their_order_and_ranges_upwards(field: str, text: str, values: tuple[int, ...]) -> None:
    assert parse_axis(field, text) == values


@pytest.mark.parametrize(
    ("field", "text", "says"),
    [
        ("iodepth", "0,1", "iodepth: '0' is not a queue depth a profile can run (1 to 4096)"),
        ("iodepth", "1,8192", "iodepth: '8192' is not a queue depth a profile can run (1 to 4096)"),
        ("jobs", "1,300", "numjobs: '300' is not a number of jobs a profile can run (1 to 256)"),
        ("read_percent", "50,101", "read share: '101' is not a read share in percent a profile can run (0 to 100)"),
        ("block_size_bytes", "100,4k", "block size: '100' is not a block size a profile can run (at least 512 bytes"),
        ("iodepth", "one,two", "iodepth: 'one' is not a queue depth"),
        ("iodepth", "1-100 x2", "iodepth: '1-100 x2' does not land on 100; end it at 64 or 128"),
        ("iodepth", "1-4000 x2", "does not land on 4000; end it at 2048 or 4096"),
        ("iodepth", "1-4095 x2", "end it at 2048 or 4096"),
        ("read_percent", "0-100 +30", "end it at 90"),
        ("block_size_bytes", "4k-100k x2", "end it at 64k or 128k"),
        ("iodepth", "256-1 x2", "must run upwards; write it 1-256"),
        ("iodepth", "1-256", "a range without its step; give one, such as 1-256 x2"),
        ("iodepth", "1-8 x1", "never grows"),
        ("iodepth", "1-8 +0", "'0' is not a step"),
        ("iodepth", "1-4096 +1", "makes more than 128 values; take a larger step"),
        ("jobs", "1,2,1", "numjobs: '1' is there twice"),
        ("jobs", "1,,2", "has an empty entry"),
        ("iodepth", "16", "at least two values, not one; set 16 on the base profile instead"),
        ("block_size_bytes", "64k", "set 64k on the base profile instead"),
        ("iodepth", "", "iodepth: give a list such as 1,2,4,16 or a range such as 1-256 x2"),
        ("iodepth", "9" * 5000 + ",1", "is not a queue depth"),
    ],
)
def test_it_refuses_an_axis_naming_it_and_the_fix(field: str, text: str, says: str) -> None:
    with pytest.raises(SweepError) as refused:
        parse_axis(field, text)
    assert says in str(refused.value)
    assert refused.value.field == field


def test_it_names_the_processes_axis_as_ndisk64_does() -> None:
    with pytest.raises(SweepError, match=r"^processes \(-M\): '0' is not a number of jobs"):
        parse_axis("jobs", "0,1", "ndisk64")


def test_it_refuses_a_field_a_sweep_does_not_vary() -> None:
    with pytest.raises(SweepError, match="a sweep varies iodepth, jobs, block_size_bytes, read_percent; not 'rw'"):
        parse_axis("rw", "read,write")


def test_the_grid_runs_the_first_axis_outer() -> None:
    plan = make_plan(fio_profile(), {"jobs": "1,2", "iodepth": "32-128 x2"})
    assert plan.points == [
        {"jobs": 1, "iodepth": 32},
        {"jobs": 1, "iodepth": 64},
        {"jobs": 1, "iodepth": 128},
        {"jobs": 2, "iodepth": 32},
        {"jobs": 2, "iodepth": 64},
        {"jobs": 2, "iodepth": 128},
    ]
    assert plan.count == len(plan.points) == 6


def test_the_time_is_points_times_ramp_and_runtime() -> None:
    plan = make_plan(fio_profile(ramp_time_s=5, runtime_s=60), {"iodepth": "1-16 x2"})
    assert (plan.count, plan.seconds_per_point, plan.total_s) == (5, 65, 325)
    assert plan_text(plan) == "5 points × (5 s ramp + 1 min) = 5 min 25 s"


def test_ndisk64_has_no_ramp_to_count() -> None:
    plan = make_plan(ndisk_profile(runtime_s=30) | {"ramp_time_s": 5}, {"jobs": "1,2,4"})
    assert plan.total_s == 90
    assert plan_text(plan) == "3 points × 30 s = 1 min 30 s"


def test_a_plan_within_the_bound_passes_and_one_beyond_is_refused_with_the_way_to_fit() -> None:
    plan = make_plan(fio_profile(ramp_time_s=0, runtime_s=60), {"iodepth": "1-256 x2"})
    check_bound(plan, 540)
    with pytest.raises(SweepError) as refused:
        check_bound(plan, 300)
    assert str(refused.value) == (
        "This sweep takes 9 min (9 points × 1 min), longer than the team's bound of 5 min: it fits with at most "
        "5 points or with a runtime of at most 33 s a point."
    )
    assert refused.value.field is None


def test_a_bound_shorter_than_two_points_says_none_fits() -> None:
    plan = make_plan(fio_profile(ramp_time_s=10, runtime_s=60), {"iodepth": "1,2"})
    with pytest.raises(SweepError, match="not even two points of 1 s fit; ask for a longer bound"):
        check_bound(plan, 15)
    with pytest.raises(SweepError, match=r"it fits with a runtime of at most 1 s a point\.$"):
        check_bound(plan, 22)


@pytest.mark.parametrize(
    ("base", "axes", "field", "says"),
    [
        (ndisk_profile(), {"iodepth": "1,2"}, "iodepth", "ndisk64 has no queue depth; vary its processes (-M)"),
        (fio_profile(rw="randread"), {"read_percent": "0,50"}, "read_percent", "rw=randread does not mix reads"),
        (fio_profile(size_bytes=64 * KIB), {"block_size_bytes": "4k-1M x4"}, "block_size_bytes", "256k is larger"),
        (fio_profile(), {"block_size_bytes": "512,1000"}, "block_size_bytes", "1000 is not whole 512-byte sectors"),
        (fio_profile(), {}, None, "give an axis"),
        (fio_profile(), {"iodepth": "1,2", "jobs": "1,2", "read_percent": "0,50"}, None, "at most 2 axes, not 3"),
        (fio_profile(runtime_s=0), {"iodepth": "1,2"}, "runtime_s", "runtime_s is a whole number of 1 or more"),
    ],
)
def test_it_refuses_a_sweep_its_base_cannot_run(base: dict, axes: dict, field: str | None, says: str) -> None:
    with pytest.raises(SweepError) as refused:
        make_plan(base, axes)
    assert says in str(refused.value)
    assert refused.value.field == field


def test_a_read_share_sweeps_a_mixed_fio_profile_and_any_ndisk64_one() -> None:
    assert make_plan(fio_profile(rw="randrw"), {"read_percent": "0-100 +50"}).count == 3
    assert make_plan(ndisk_profile(), {"read_percent": "0-100 +50"}).count == 3


def test_a_device_with_larger_logical_blocks_refuses_the_smaller_sizes_under_direct_io() -> None:
    base, axes = fio_profile(size_bytes=None), {"block_size_bytes": "512,4k,64k"}
    with pytest.raises(SweepError, match="block size: 512 is not whole 4k logical blocks of this device"):
        make_plan(base, axes, logical_block_bytes=4096)
    assert make_plan(base, axes, logical_block_bytes=512).count == 3
    assert make_plan(base | {"direct": False}, axes, logical_block_bytes=4096).count == 3


def test_the_bounds_are_the_profiles_own() -> None:
    def bounds(field: str) -> tuple[int | None, int | None]:
        validators = Profile._meta.get_field(field).validators
        low = [v.limit_value for v in validators if isinstance(v, MinValueValidator)]
        high = [v.limit_value for v in validators if isinstance(v, MaxValueValidator)]
        return (low[0] if low else None), (high[0] if high else None)

    assert bounds("iodepth") == (KINDS["iodepth"].low, KINDS["iodepth"].high)
    assert bounds("jobs") == (KINDS["jobs"].low, KINDS["jobs"].high)
    assert bounds("read_percent")[1] == KINDS["read_percent"].high
    assert bounds("block_size_bytes")[0] == KINDS["block_size_bytes"].low


PRESET_PLANS = {
    "QD sweep: 4k randread QD 1-256": (9, 540, "9 points × 1 min = 9 min"),
    "ESSD PL3: 4k randwrite numjobs x iodepth": (12, 720, "12 points × 1 min = 12 min"),
    "ndisk64: 4k random 50/50, 1/2/4 processes": (3, 180, "3 points × 1 min = 3 min"),
    "SNIA PTS IOPS matrix: 7 R/W mixes x 8 block sizes": (56, 3360, "56 points × 1 min = 56 min"),
}


@pytest.mark.parametrize("preset", SWEEP_PRESETS, ids=lambda preset: preset["name"])
def test_each_built_in_sweep_plans_its_points_and_time(preset: dict) -> None:
    plan = make_plan(preset["base"], preset["axes"])
    assert (plan.count, plan.total_s, plan_text(plan)) == PRESET_PLANS[preset["name"]]
    for axis in plan.axes:
        assert parse_axis(axis.field, format_axis(axis.field, axis.values)) == axis.values


def test_the_snia_matrix_is_the_specs_mixes_by_its_block_sizes() -> None:
    snia = next(preset for preset in SWEEP_PRESETS if preset["name"].startswith("SNIA"))
    mixes, sizes = make_plan(snia["base"], snia["axes"]).axes
    assert mixes.values == (100, 95, 65, 50, 35, 5, 0)
    assert sizes.values == tuple(int(kib * KIB) for kib in (0.5, 4, 8, 16, 32, 64, 128, 1024))


def test_the_built_in_sweeps_vary_the_fields_the_profile_names() -> None:
    assert [list(preset["axes"]) for preset in SWEEP_PRESETS] == [
        ["iodepth"],
        ["jobs", "iodepth"],
        ["jobs"],
        ["read_percent", "block_size_bytes"],
    ]


def _units(field: str) -> tuple[int, int, int]:
    """An axis's bounds counted in its unit: 512 bytes for block sizes (direct I/O's sector; up to 64 MiB), else 1."""
    kind = KINDS[field]
    unit = sweep_plan.SECTOR if kind.size else 1
    return unit, max(kind.low // unit, 1 if kind.size else kind.low), min(kind.high, 64 * MIB) // unit


def _text(field: str, value: int) -> str:
    return short_size(value) if KINDS[field].size else str(value)


@st.composite
def ranges(draw: st.DrawFn) -> tuple[str, str]:
    """A valid range of any axis: multiplied from a first value, or stepped, ending where its steps land."""
    field = draw(st.sampled_from(sorted(KINDS)))
    unit, low, high = _units(field)
    if draw(st.booleans()):
        factor = draw(st.integers(2, 8))
        first = draw(st.integers(max(low, 1), high // factor))
        most = max(n for n in range(1, 40) if first * factor ** (n - 1) <= high)
        last = first * factor ** (draw(st.integers(2, most)) - 1)
        return field, f"{_text(field, first * unit)}-{_text(field, last * unit)} x{factor}"
    first = draw(st.integers(low, high - 1))
    step = draw(st.integers(1, high - first))
    last = first + step * draw(st.integers(1, min(sweep_plan.MAX_VALUES - 1, (high - first) // step)))
    return field, f"{_text(field, first * unit)}-{_text(field, last * unit)} +{_text(field, step * unit)}"


@FAST
@given(ranges())
def test_any_valid_range_reads_as_a_rising_list_within_the_bounds_and_formats_back(case: tuple[str, str]) -> None:
    field, text = case
    kind = KINDS[field]
    values = parse_axis(field, text)
    assert all(a < b for a, b in itertools.pairwise(values))
    assert kind.low <= values[0] and values[-1] <= kind.high
    assert parse_axis(field, format_axis(field, values)) == values


@st.composite
def lists(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    field = draw(st.sampled_from(sorted(KINDS)))
    unit, low, high = _units(field)
    values = draw(st.lists(st.integers(low, high), min_size=2, max_size=20, unique=True))
    return field, tuple(value * unit for value in values)


@FAST
@given(lists())
def test_any_list_of_distinct_values_formats_back_to_itself(case: tuple[str, tuple[int, ...]]) -> None:
    field, values = case
    assert parse_axis(field, format_axis(field, values)) == values


@pytest.mark.parametrize(
    ("text", "size"), [("4096", 4096), ("4k", 4 * KIB), (" 64 KiB ", 64 * KIB), ("1M", MIB), ("4G", 4 * 1024**3)]
)
def test_a_size_reads_as_the_profile_form_reads_it_and_writes_back_short(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert parse_size(short_size(size)) == size


@pytest.mark.parametrize("text", ["", "4x", "-4k", "4.5k", "k"])
def test_a_size_that_is_none_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a byte count such as 4096, 4k"):
        parse_size(text)
