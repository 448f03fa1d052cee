"""A synchronised group's limit (jobs/sets/group_totals.py's group_limit): its members' theoretical limits summed
against the backend's cap, the lower binding; how a host's clock reading is read (jobs/remote/clock.py), a
stored offset taken back (group_result.measured_offset) and an offset written. Pure functions: no database."""

from __future__ import annotations

import pytest

from jobs.remote import RemoteError, host_time
from jobs.sets.group_clocks import ClockOffset, clock_offset, decimal_places, plus_minus
from jobs.sets.group_result import measured_offset
from jobs.sets.group_totals import CAP_IOPS, CAP_MB_S, MEMBERS, Rates, group_limit

KIB4 = 4096
# Three members of 10,000 IOPS and 160 MB/s each at 4 KiB (IOPS binds each one: 40.96 MB/s).
THREE = {f"member {n}": Rates(10_000.0, 160e6) for n in (1, 2, 3)}


def test_without_a_cap_the_group_limit_is_its_members_limits_summed():
    limit = group_limit(THREE, KIB4)
    assert (limit.iops, limit.binds, limit.members_iops) == (30_000.0, MEMBERS, 30_000.0)
    assert limit.bytes_per_s == 30_000 * KIB4 and limit.members_bytes_per_s == 480e6
    assert limit.text() == "30,000 IOPS (the members' limits summed)"


def test_a_backend_iops_cap_below_the_sum_binds():
    limit = group_limit(THREE, KIB4, cap_iops=25_000)
    assert (limit.iops, limit.binds, limit.members_iops, limit.cap_iops) == (25_000, CAP_IOPS, 30_000.0, 25_000)
    assert limit.text() == "25,000 IOPS (the backend's IOPS cap)"


def test_a_backend_mb_s_cap_is_compared_in_iops_at_the_block_size():
    # 100 MB/s at 4 KiB is 24,414.0625 IOPS: below the IOPS cap and the members' sum, so it binds.
    limit = group_limit(THREE, KIB4, cap_iops=28_000, cap_bytes_per_s=100e6)
    assert limit.binds == CAP_MB_S and limit.iops == pytest.approx(100e6 / KIB4)
    assert limit.bytes_per_s == pytest.approx(100e6)
    assert limit.text() == "24,414.1 IOPS (the backend's MB/s cap at the block size)"


def test_a_cap_above_the_sum_does_not_bind():
    assert group_limit(THREE, KIB4, cap_iops=1e6, cap_bytes_per_s=1e10).binds == MEMBERS


def test_a_member_without_a_limit_leaves_the_sum_empty_and_the_cap_alone_binds():
    members = THREE | {"member 4": Rates(None, None)}
    limit = group_limit(members, KIB4)
    assert (limit.iops, limit.members_iops, limit.binds) == (None, None, "")
    assert limit.text() == "no limit: member 4 has no theoretical limit"
    capped = group_limit(members, KIB4, cap_iops=20_000)
    assert (capped.iops, capped.binds) == (20_000, CAP_IOPS) and "member 4 has no theoretical limit" in capped.why


def test_a_mb_s_cap_without_a_block_size_is_not_compared_and_says_so():
    limit = group_limit(THREE, None, cap_bytes_per_s=50e6)
    assert (limit.iops, limit.binds, limit.bytes_per_s) == (30_000.0, MEMBERS, 480e6)
    assert limit.why == "the MB/s cap is not compared: the profile has no single block size"


@pytest.mark.parametrize(("cap_iops", "cap_bytes"), [(0, None), (-5, None), (None, float("nan"))])
def test_a_cap_that_is_no_rate_is_refused_naming_it(cap_iops, cap_bytes):
    with pytest.raises(ValueError, match="a backend's cap is a rate above 0"):
        group_limit(THREE, KIB4, cap_iops=cap_iops, cap_bytes_per_s=cap_bytes)


def test_a_host_clock_reading_is_epoch_seconds_with_nanoseconds():
    assert host_time(0, b"1790000000.123456789\n") == pytest.approx(1790000000.123456789)


@pytest.mark.parametrize(
    ("status", "stdout"),
    [(0, b"1790000000.N\n"), (0, b"1790000000\n"), (1, b"1790000000.123456789\n"), (0, b"")],
)
def test_a_date_without_nanoseconds_or_a_failed_one_is_refused(status, stdout):
    with pytest.raises(RemoteError, match="its clock offset is not measured"):
        host_time(status, stdout)


def test_a_stored_offset_is_read_back_and_a_reason_or_garbage_is_none():
    found = clock_offset([(10.0, 10.5, 10.5, 10.004)])
    stored = {"offset_s": found.offset_s, "uncertainty_s": found.uncertainty_s, "delay_s": found.delay_s}
    assert measured_offset(stored) == ClockOffset(found.offset_s, found.uncertainty_s, found.delay_s)
    assert measured_offset({"why": "offset not measured: the connection dropped"}) is None
    assert measured_offset({"offset_s": "0.1", "uncertainty_s": 0.1, "delay_s": 0.2}) is None
    assert measured_offset(None) is None


def test_an_offset_is_written_signed_to_its_uncertaintys_first_digit():
    assert plus_minus(0.0012, 0.0004, signed=True) == "+0.0012 s ± 0.0004 s"
    assert plus_minus(-0.0481, 0.0099999, signed=True) == "-0.05 s ± 0.01 s"
    assert plus_minus(0.08, 0.01) == "0.08 s ± 0.01 s"
    assert decimal_places(0.3, 0.0) == 2 and decimal_places(0.0, 0.0) == 2 and decimal_places(1.0, 1e-9) == 6
