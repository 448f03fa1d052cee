"""The disk-spec catalog, checked against the published formulas at their boundaries.

Expected numbers are worked out by hand from docs/reference/disk-limits.md (the comment on a row shows
the arithmetic), not read back from the catalog.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from itertools import pairwise

import pytest

from jobs import limits
from jobs.limits import Spec, SpecError, evaluate

MB = 10**6
MiB = 2**20
KiB = 2**10
TODAY = date(2026, 11, 22)


def of(disk_type: str, size: float | None = None, *, block_size: int | None = None, on: date = TODAY, **kw):
    return evaluate(Spec(disk_type, size, **kw), block_size=block_size, on=on)


def refused(disk_type: str, size: float | None = None, *, on: date = TODAY, **kw) -> SpecError:
    with pytest.raises(SpecError) as info:
        of(disk_type, size, on=on, **kw)
    return info.value


# ----------------------------------------------------------------------------- the catalog itself

ISSUE_TYPES = [
    "alibaba-ultra", "alibaba-ssd", "alibaba-essd-pl0", "alibaba-essd-pl1", "alibaba-essd-pl2", "alibaba-essd-pl3",
    "alibaba-essd-autopl", "aws-gp2", "aws-gp3", "aws-io1", "aws-io2", "aws-st1", "aws-sc1", "azure-premium-ssd",
    "azure-premium-ssd-v2", "azure-ultra", "gcp-pd-standard", "gcp-pd-balanced", "gcp-pd-ssd", "ibm-powervs-tier0",
    "ibm-powervs-tier1", "ibm-powervs-tier3", "ibm-powervs-fixed5k", "oci-balanced", "oci-higher-performance",
    "solidfire-qos", "custom",
]  # fmt: skip


def test_the_catalog_has_every_type_the_issue_names():
    assert set(ISSUE_TYPES) <= {kind.id for kind in limits.disk_types()}


def test_every_type_has_exactly_one_record_in_effect_on_any_date():
    for kind in limits.disk_types():
        records = kind.records
        assert records[0].effective_from is None, kind.id
        assert records[-1].effective_until is None, kind.id
        for older, newer in pairwise(records):
            assert older.effective_until == newer.effective_from, kind.id


def test_every_vendor_record_cites_its_source_url_and_date():
    for kind in limits.disk_types():
        if kind.id == "custom":
            continue
        for record in kind.records:
            assert record.source_url.startswith("http"), record.id
            assert record.source_date, record.id
            assert record.source == {"url": record.source_url, "date": record.source_date, "verified": record.verified}


def test_the_catalog_file_is_read_once():
    assert limits._catalog() is limits._catalog()


def test_a_misspelt_key_in_the_catalog_fails_at_load_instead_of_giving_wrong_numbers():
    record = {
        "id": "x", "size": {"unit": "GiB", "min": 1, "max": 2}, "iops": {"model": "linear", "per_sise": 3},
        "source": {"url": "https://example.com", "date": "2025", "verified": True},
    }  # fmt: skip
    with pytest.raises(ValueError, match="per_sise"):
        limits._record("x", record)


def test_throughput_units_follow_the_source_mb_decimal_and_mib_binary():
    assert limits.THROUGHPUT_UNITS["MB/s"] == 1_000_000
    assert limits.THROUGHPUT_UNITS["MiB/s"] == 1_048_576
    assert of("alibaba-ultra", 400).throughput_bytes_per_s == 140_000_000  # 140 MB/s
    assert of("aws-gp3", 100).throughput_bytes_per_s == 131_072_000  # 125 MiB/s


# ----------------------------------------------------------------------------- Alibaba Cloud


@pytest.mark.parametrize(
    ("disk_type", "size", "iops", "bytes_per_s"),
    [
        ("alibaba-ultra", 20, 1960, 103 * MB),  # 1800 + 8*20; 100 + 0.15*20
        ("alibaba-ultra", 266, 3928, 139_900_000),  # 100 + 0.15*266 = 139.9, just under the cap
        ("alibaba-ultra", 267, 3936, 140 * MB),  # 140.05 -> throughput cap 140 reached at ~267 GiB
        ("alibaba-ultra", 399, 4992, 140 * MB),  # 1800 + 8*399
        ("alibaba-ultra", 400, 5000, 140 * MB),  # IOPS cap reached exactly
        ("alibaba-ultra", 401, 5000, 140 * MB),
        ("alibaba-ssd", 20, 2400, 130 * MB),  # the current formula gives 2,400 at 20 GiB, not 1,800
        ("alibaba-ssd", 359, 12570, 299_500_000),  # 120 + 0.5*359
        ("alibaba-ssd", 360, 12600, 300 * MB),  # throughput cap at 360 GiB
        ("alibaba-ssd", 500, 16800, 300 * MB),  # the vendor's system-disk example
        ("alibaba-ssd", 773, 24990, 300 * MB),
        ("alibaba-ssd", 774, 25000, 300 * MB),  # 1800 + 30*774 = 25,020 -> cap
        ("alibaba-essd-pl0", 1, 1812, 100_250_000),
        ("alibaba-essd-pl0", 319, 5628, 179_750_000),
        ("alibaba-essd-pl0", 320, 5640, 180 * MB),
        ("alibaba-essd-pl0", 683, 9996, 180 * MB),
        ("alibaba-essd-pl0", 684, 10000, 180 * MB),  # 10,008 -> cap
        ("alibaba-essd-pl1", 20, 2800, 130 * MB),
        ("alibaba-essd-pl1", 459, 24750, 349_500_000),
        ("alibaba-essd-pl1", 460, 24800, 350 * MB),
        ("alibaba-essd-pl1", 963, 49950, 350 * MB),
        ("alibaba-essd-pl1", 964, 50000, 350 * MB),
        ("alibaba-essd-pl2", 461, 24850, 350_500_000),
        ("alibaba-essd-pl2", 1259, 64750, 749_500_000),
        ("alibaba-essd-pl2", 1260, 64800, 750 * MB),
        ("alibaba-essd-pl2", 1600, 81800, 750 * MB),  # the vendor's instance-cap example, uncapped
        ("alibaba-essd-pl2", 1963, 99950, 750 * MB),
        ("alibaba-essd-pl2", 1964, 100000, 750 * MB),
        ("alibaba-essd-pl3", 1261, 64850, 750_500_000),
        ("alibaba-essd-pl3", 7759, 389750, 3_999_500_000),
        ("alibaba-essd-pl3", 7760, 389800, 4000 * MB),
        ("alibaba-essd-pl3", 19963, 999950, 4000 * MB),
        ("alibaba-essd-pl3", 19964, 1_000_000, 4000 * MB),
        ("alibaba-essd-entry", 10, 1880, 101_500_000),
        ("alibaba-essd-entry", 333, 4464, 149_950_000),
        ("alibaba-essd-entry", 334, 4472, 150 * MB),  # 150.1 -> cap
        ("alibaba-essd-entry", 524, 5992, 150 * MB),
        ("alibaba-essd-entry", 525, 6000, 150 * MB),
    ],
)
def test_alibaba_linear_formulas_hold_at_their_caps(disk_type, size, iops, bytes_per_s):
    result = of(disk_type, size)
    assert (result.iops, result.throughput_bytes_per_s) == (iops, bytes_per_s)
    assert result.burst_iops is None and result.burst_throughput_bytes_per_s is None


@pytest.mark.parametrize(
    ("disk_type", "too_small", "smallest", "largest", "too_large"),
    [
        ("alibaba-ultra", 19, 20, 32768, 32769),
        ("alibaba-ssd", 19, 20, 32768, 32769),
        ("alibaba-essd-pl0", 0.5, 1, 65536, 65537),
        ("alibaba-essd-pl1", 19, 20, 65536, 65537),
        ("alibaba-essd-pl2", 460, 461, 65536, 65537),
        ("alibaba-essd-pl3", 1260, 1261, 65536, 65537),
        ("alibaba-essd-autopl", 0.5, 1, 65536, 65537),
        ("alibaba-essd-entry", 9, 10, 32768, 32769),
        ("aws-gp2", 0.5, 1, 16384, 16385),
        ("aws-gp3", 0.5, 1, 65536, 65537),
        ("aws-st1", 124, 125, 16384, 16385),
        ("aws-sc1", 124, 125, 16384, 16385),
        ("azure-premium-ssd", 0.5, 1, 32767, 32768),
        ("azure-premium-ssd-v2", 0.5, 1, 65536, 65537),
        ("gcp-pd-standard", 9, 10, 65536, 65537),
        ("gcp-pd-balanced", 9, 10, 65536, 65537),
        ("gcp-pd-ssd", 9, 10, 65536, 65537),
        ("ibm-vpc-general-purpose", 9, 10, 16000, 16001),
        ("ibm-vpc-5iops-tier", 9, 10, 9600, 9601),
        ("ibm-vpc-10iops-tier", 9, 10, 4800, 4801),
        ("oci-balanced", 49, 50, 32768, 32769),
        ("oci-higher-performance", 49, 50, 32768, 32769),
    ],
)
def test_sizes_outside_the_published_range_are_refused_naming_the_range(
    disk_type, too_small, smallest, largest, too_large
):
    of(disk_type, smallest)
    of(disk_type, largest)
    for size in (too_small, too_large):
        error = refused(disk_type, size)
        assert error.field == "size"
        assert f"{smallest:,} to {largest:,}" in str(error)


def test_the_design_field_workload_eight_ultra_disks_of_400_gib_give_40000_iops_and_1120_mb_s():
    result = of("alibaba-ultra", 400, stripes=8)
    assert result.iops == 40_000
    assert result.throughput_bytes_per_s == 1_120_000_000  # 8 x 140 MB/s


def test_an_instance_cap_binds_a_1600_gib_pl2_disk_on_ecs_g6_8xlarge_at_60000_iops():
    result = of("alibaba-essd-pl2", 1600, instance_iops_cap=60_000)
    assert result.iops == 60_000
    assert result.throughput_bytes_per_s == 750 * MB
    assert result.capped_by_instance == ("iops",)


def test_an_instance_throughput_cap_binds_a_stripe_set():
    result = of("alibaba-ultra", 400, stripes=8, instance_bytes_per_s_cap=625 * MB)
    assert result.throughput_bytes_per_s == 625 * MB
    assert result.iops == 40_000
    assert result.capped_by_instance == ("throughput",)


def test_the_2017_alibaba_formulas_apply_to_benchmarks_before_2020():
    ssd = of("alibaba-ssd", 20, on=date(2018, 6, 1))
    assert (ssd.iops, ssd.throughput_bytes_per_s) == (600, 60 * MB)  # 30*20; 50 + 0.5*20
    assert ssd.record_id == "alibaba/cloud_ssd@2017"
    assert of("alibaba-ssd", 700, on=date(2018, 6, 1)).iops == 20_000  # 21,000 -> cap
    ultra = of("alibaba-ultra", 300, on=date(2019, 12, 31))
    assert (ultra.iops, ultra.throughput_bytes_per_s) == (2800, 80 * MB)  # 1000 + 6*300; 50 + 0.1*300 = 80
    assert of("alibaba-ultra", 300, on=date(2020, 1, 1)).iops == 4200


def test_essd_size_ranges_follow_the_benchmark_date():
    assert refused("alibaba-essd-pl0", 39, on=date(2022, 6, 1)).field == "size"
    assert of("alibaba-essd-pl0", 40, on=date(2022, 6, 1)).iops == 2280
    assert "20 to 32,768 GiB" in str(refused("alibaba-essd-pl1", 40000, on=date(2023, 12, 31)))
    assert of("alibaba-essd-pl1", 40000, on=date(2024, 1, 1)).iops == 50_000
    assert of("alibaba-essd-pl0", 1).record_id == "alibaba/cloud_essd/PL0@2024"


def test_autopl_has_3000_iops_and_125_mb_s_floors_since_2026():
    small = of("alibaba-essd-autopl", 1)
    assert (small.iops, small.throughput_bytes_per_s) == (3000, 125 * MB)  # 1,850 and 120.5 raised to the floor
    assert small.burst_iops is None  # the burst ceiling 1,000 x 1 is below the baseline
    assert of("alibaba-essd-autopl", 24).iops == 3000  # 1800 + 50*24 = 3,000 exactly
    assert of("alibaba-essd-autopl", 25).iops == 3050
    assert of("alibaba-essd-autopl", 10).throughput_bytes_per_s == 125 * MB  # 120 + 5 = 125 exactly
    assert of("alibaba-essd-autopl", 11).throughput_bytes_per_s == 125_500_000
    assert of("alibaba-essd-autopl", 964).iops == 50_000
    assert of("alibaba-essd-autopl", 2000).throughput_bytes_per_s == 350 * MB


def test_autopl_provisioned_iops_add_to_the_baseline_with_16_kib_each():
    result = of("alibaba-essd-autopl", 40, iops=10_000)
    assert result.iops == 13_800  # 1800 + 50*40 + 10,000
    assert result.throughput_bytes_per_s == 140 * MB + 10_000 * 16 * KiB  # 303,840,000


def test_autopl_burst_ceiling_is_1000_iops_per_gib_up_to_a_million_with_16_kib_each_up_to_4_gb_s():
    result = of("alibaba-essd-autopl", 40)
    assert result.burst_iops == 40_000
    assert result.burst_throughput_bytes_per_s == 40_000 * 16 * KiB  # 655,360,000
    assert result.burst_kind == "on_demand" and result.burst_seconds is None
    large = of("alibaba-essd-autopl", 1001)
    assert large.burst_iops == 1_000_000  # 1,001,000 -> cap
    assert large.burst_throughput_bytes_per_s == 4_000_000_000


def test_autopl_provisioned_iops_are_bounded_by_1000_per_gib_in_total_and_by_50000():
    assert of("alibaba-essd-autopl", 40, iops=36_200).iops == 40_000  # 40,000 - 3,800 baseline
    error = refused("alibaba-essd-autopl", 40, iops=36_201)
    assert error.field == "iops" and "1 to 36,200 IOPS" in str(error)
    assert of("alibaba-essd-autopl", 4, iops=1000).iops == 4000  # 4,000 - 3,000 baseline
    assert refused("alibaba-essd-autopl", 4, iops=1001).field == "iops"
    assert of("alibaba-essd-autopl", 2000, iops=50_000).iops == 100_000
    assert "at most 50,000" in str(refused("alibaba-essd-autopl", 2000, iops=50_001))
    error = refused("alibaba-essd-autopl", 3, iops=1)
    assert error.field == "iops" and "at least 4 GiB" in str(error)


def test_autopl_uses_the_january_2024_revision_before_2026():
    old = of("alibaba-essd-autopl", 40, on=date(2025, 12, 31))
    assert old.record_id == "alibaba/cloud_auto@2024-01"
    assert refused("alibaba-essd-autopl", 1, on=date(2025, 12, 31)).field == "size"  # 40 to 32,768 GiB then
    assert of("alibaba-essd-autopl", 40, on=date(2026, 1, 1)).record_id == "alibaba/cloud_auto@2026-01"


# ----------------------------------------------------------------------------- AWS EBS


@pytest.mark.parametrize(
    ("size", "iops"),
    [(1, 100), (33, 100), (34, 102), (999, 2997), (1000, 3000), (5333, 15999), (5334, 16000), (16384, 16000)],
)
def test_gp2_iops_are_3_per_gib_between_100_and_16000(size, iops):
    assert of("aws-gp2", size).iops == iops


def test_gp2_bursts_to_3000_iops_only_under_1000_gib():
    small = of("aws-gp2", 100)
    assert small.burst_iops == 3000 and small.burst_kind == "credit"
    assert small.burst_seconds == 2000  # 5.4M credits / (3,000 - 300)
    assert of("aws-gp2", 999).burst_iops == 3000
    assert of("aws-gp2", 1000).burst_iops is None


@pytest.mark.parametrize(
    ("size", "baseline", "burst"),
    [
        (170, 128 * MiB, None),  # 128 MiB/s cap up to 170 GiB, bursting or not
        (171, 128.25 * MiB, 250 * MiB),  # without credits: 513 IOPS x 256 KiB
        (333, 249.75 * MiB, 250 * MiB),
        (334, 250 * MiB, None),
    ],
)
def test_gp2_throughput_steps_at_170_and_334_gib(size, baseline, burst):
    result = of("aws-gp2", size)
    assert result.throughput_bytes_per_s == baseline
    assert result.burst_throughput_bytes_per_s == burst


def test_gp3_gives_3000_iops_and_125_mib_s_when_nothing_is_provisioned():
    result = of("aws-gp3", 1)
    assert (result.iops, result.throughput_bytes_per_s) == (3000, 125 * MiB)
    assert result.burst_iops is None


def test_gp3_provisioned_iops_are_bounded_by_500_per_gib():
    assert of("aws-gp3", 8, iops=4000).iops == 4000
    error = refused("aws-gp3", 8, iops=4001)
    assert error.field == "iops" and "3,000 to 4,000 IOPS" in str(error)
    assert refused("aws-gp3", 1, iops=3001).field == "iops"  # below 6 GiB only the included 3,000
    assert refused("aws-gp3", 100, iops=2999).field == "iops"


def test_gp3_provisioned_throughput_is_bounded_by_a_quarter_mib_s_per_iops():
    assert of("aws-gp3", 8, iops=4000, bytes_per_s=1000 * MiB).throughput_bytes_per_s == 1000 * MiB
    error = refused("aws-gp3", 8, iops=4000, bytes_per_s=1000 * MiB + 1)
    assert error.field == "bytes_per_s" and "125 to 1,000 MiB/s" in str(error)
    error = refused("aws-gp3", 8, bytes_per_s=751 * MiB)  # default 3,000 IOPS allow 750 MiB/s
    assert "125 to 750 MiB/s" in str(error) and "131,072,000 to 786,432,000 bytes/s" in str(error)


def test_gp3_uses_the_september_2025_limits_from_that_date():
    before, after = date(2025, 8, 31), date(2025, 9, 1)
    assert "3,000 to 16,000 IOPS" in str(refused("aws-gp3", 160, iops=80_000, on=before))
    assert of("aws-gp3", 160, iops=80_000, on=after).iops == 80_000
    assert refused("aws-gp3", 159, iops=80_000, on=after).field == "iops"  # 500 x 159 = 79,500
    assert refused("aws-gp3", 100, iops=8000, bytes_per_s=2000 * MiB, on=before).field == "bytes_per_s"
    assert of("aws-gp3", 100, iops=8000, bytes_per_s=2000 * MiB, on=after).throughput_bytes_per_s == 2000 * MiB
    assert refused("aws-gp3", 65536, on=before).field == "size"
    assert of("aws-gp3", 65536, on=after).record_id == "aws/gp3@2025-09"


def test_io1_needs_provisioned_iops_within_50_per_gib():
    error = refused("aws-io1", 8)
    assert error.field == "iops" and "100 to 400 IOPS" in str(error)
    assert of("aws-io1", 4, iops=200).iops == 200
    assert refused("aws-io1", 4, iops=201).field == "iops"
    assert refused("aws-io1", 100, iops=99).field == "iops"
    assert of("aws-io1", 1280, iops=64_000).iops == 64_000
    assert refused("aws-io1", 2000, iops=64_001).field == "iops"


@pytest.mark.parametrize(
    ("iops", "mib_s"),
    [(1000, 250), (2000, 500), (32_000, 500), (40_000, 625), (64_000, 1000)],  # 256 KiB each to 500; then 16 KiB
)
def test_io1_throughput_follows_256_kib_per_iop_to_500_mib_s_then_16_kib_above_32000(iops, mib_s):
    assert of("aws-io1", 1280, iops=iops).throughput_bytes_per_s == mib_s * MiB


def test_io1_throughput_is_not_typed_by_the_user():
    assert refused("aws-io1", 100, iops=1000, bytes_per_s=10**8).field == "bytes_per_s"


def test_io2_allows_1000_iops_per_gib_up_to_256000_with_0_256_mib_s_each_up_to_4000():
    assert of("aws-io2", 4, iops=4000).iops == 4000
    assert refused("aws-io2", 4, iops=4001).field == "iops"
    assert of("aws-io2", 256, iops=256_000).iops == 256_000
    assert refused("aws-io2", 1000, iops=256_001).field == "iops"
    assert of("aws-io2", 100, iops=10_000).throughput_bytes_per_s == 2560 * MiB
    assert of("aws-io2", 100, iops=15_625).throughput_bytes_per_s == 4000 * MiB
    assert of("aws-io2", 100, iops=20_000).throughput_bytes_per_s == 4000 * MiB
    assert of("aws-io2", 100, iops=1000).source["verified"] is False  # the per-IOPS ratio is UNVERIFIED


@pytest.mark.parametrize(
    ("disk_type", "size", "iops", "baseline", "burst"),
    [
        ("aws-st1", 125, 500, 5_120_000, 32_000_000),  # 40 and 250 MiB/s per TiB x 125/1024 TiB
        ("aws-st1", 1024, 500, 40 * MiB, 250 * MiB),
        ("aws-st1", 2048, 500, 80 * MiB, 500 * MiB),  # burst reaches its 500 MiB/s cap
        ("aws-st1", 12800, 500, 500 * MiB, None),  # baseline reaches the per-volume 500: nothing left to burst
        ("aws-st1", 16384, 500, 500 * MiB, None),
        ("aws-sc1", 1024, 250, 12 * MiB, 80 * MiB),
        ("aws-sc1", 3199, 250, 3199 * 12 / 1024 * MiB, 3199 * 80 / 1024 * MiB),
        ("aws-sc1", 3200, 250, 37.5 * MiB, 250 * MiB),  # burst cap 250 reached
        ("aws-sc1", 16384, 250, 192 * MiB, 250 * MiB),
    ],
)
def test_hdd_throughput_scales_per_tib_with_a_burst_to_the_volume_maximum(disk_type, size, iops, baseline, burst):
    result = of(disk_type, size)
    assert result.iops == iops
    assert result.throughput_bytes_per_s == pytest.approx(baseline, abs=0.001)
    if burst is None:
        assert result.burst_throughput_bytes_per_s is None
    else:
        assert result.burst_throughput_bytes_per_s == pytest.approx(burst, abs=0.001)
    assert result.burst_iops is None


def test_st1_burst_lasts_as_long_as_its_1_tib_per_tib_bucket_refilled_at_baseline():
    assert of("aws-st1", 1024).burst_seconds == pytest.approx(2**40 / (210 * MiB), abs=0.001)  # ~83 min


def test_at_one_mib_an_st1_volume_is_bound_by_its_throughput():
    result = of("aws-st1", 1024, block_size=MiB)
    assert result.binding == "throughput"
    assert result.effective_iops == 40  # 40 MiB/s / 1 MiB
    assert result.effective_burst_iops == 250


# ----------------------------------------------------------------------------- Azure


@pytest.mark.parametrize(
    ("size", "tier", "iops", "mb_s"),
    [
        (1, "P1", 120, 25),
        (4, "P1", 120, 25),
        (5, "P2", 120, 25),
        (64, "P6", 240, 50),
        (128, "P10", 500, 100),
        (129, "P15", 1100, 125),  # rounds up to the next tier
        (512, "P20", 2300, 150),
        (513, "P30", 5000, 200),
        (2048, "P40", 7500, 250),
        (4096, "P50", 7500, 250),
        (8192, "P60", 16000, 500),
        (16384, "P70", 18000, 750),
        (32767, "P80", 20000, 900),
    ],
)
def test_azure_premium_ssd_rounds_the_size_up_to_its_tier(size, tier, iops, mb_s):
    result = of("azure-premium-ssd", size)
    assert (result.tier, result.iops, result.throughput_bytes_per_s) == (tier, iops, mb_s * MB)


def test_azure_premium_ssd_bursts_on_credits_to_p20_and_on_demand_from_p30():
    small = of("azure-premium-ssd", 512)
    assert (small.burst_iops, small.burst_throughput_bytes_per_s) == (3500, 170 * MB)
    assert (small.burst_kind, small.burst_seconds) == ("credit", 1800)
    large = of("azure-premium-ssd", 513)
    assert (large.burst_iops, large.burst_throughput_bytes_per_s) == (30_000, 1000 * MB)
    assert (large.burst_kind, large.burst_seconds) == ("on_demand", None)


def test_azure_premium_ssd_v2_gives_3000_iops_and_125_mb_s_free_and_provisions_500_iops_per_gib():
    result = of("azure-premium-ssd-v2", 1)
    assert (result.iops, result.throughput_bytes_per_s) == (3000, 125 * MB)
    assert refused("azure-premium-ssd-v2", 6, iops=3001).field == "iops"  # max(3,000, 500 x 6)
    assert of("azure-premium-ssd-v2", 160, iops=80_000).iops == 80_000
    assert "3,000 to 79,500 IOPS" in str(refused("azure-premium-ssd-v2", 159, iops=80_000))
    assert of("azure-premium-ssd-v2", 100, iops=8000, bytes_per_s=2000 * MB).throughput_bytes_per_s == 2000 * MB
    assert refused("azure-premium-ssd-v2", 100, bytes_per_s=750 * MB + 1).field == "bytes_per_s"  # 0.25 x 3,000


def test_azure_ultra_needs_both_values_within_1000_iops_per_gib_and_a_quarter_mb_s_per_iop():
    assert refused("azure-ultra", 4, bytes_per_s=10 * MB).field == "iops"
    assert refused("azure-ultra", 4, iops=100).field == "bytes_per_s"
    result = of("azure-ultra", 400, iops=400_000, bytes_per_s=10_000 * MB)
    assert (result.iops, result.throughput_bytes_per_s) == (400_000, 10_000 * MB)
    assert refused("azure-ultra", 4, iops=4001, bytes_per_s=MB).field == "iops"
    assert refused("azure-ultra", 400, iops=1000, bytes_per_s=250 * MB + 1).field == "bytes_per_s"
    assert refused("azure-ultra", 400, iops=99, bytes_per_s=MB).field == "iops"


# ----------------------------------------------------------------------------- Google Cloud


def test_gcp_pd_standard_reports_the_lower_read_iops_and_the_write_figure_apart():
    result = of("gcp-pd-standard", 1000)
    assert result.iops == 750  # read 0.75/GiB
    assert result.write_iops == 1500  # write 1.5/GiB
    assert result.throughput_bytes_per_s == 120 * MiB  # 0.12 MiB/s per GiB
    assert "read figure" in result.notes
    assert of("gcp-pd-standard", 10).iops == 7.5


@pytest.mark.parametrize(
    ("disk_type", "size", "iops", "mib_s"),
    [
        ("gcp-pd-balanced", 10, 3000, 140),  # baseline floors (UNVERIFIED figures)
        ("gcp-pd-balanced", 499, 3000, 140),  # 2,994 and 139.72 still under the floors
        ("gcp-pd-balanced", 500, 3000, 140),
        ("gcp-pd-balanced", 501, 3006, 140.28),
        ("gcp-pd-ssd", 199, 6000, 240),
        ("gcp-pd-ssd", 201, 6030, 240),
        ("gcp-pd-ssd", 500, 15000, 240),
        ("gcp-pd-ssd", 501, 15030, 240.48),
    ],
)
def test_gcp_pd_scales_per_gib_above_its_baseline(disk_type, size, iops, mib_s):
    result = of(disk_type, size)
    assert result.iops == iops
    assert result.throughput_bytes_per_s == pytest.approx(mib_s * MiB, abs=0.001)
    assert result.write_iops is None  # read and write figures are equal


# ----------------------------------------------------------------------------- IBM Cloud


def test_ibm_power_vs_tiers_give_iops_per_gb_and_no_throughput():
    tier1 = of("ibm-powervs-tier1", 2000, block_size=MiB)
    assert tier1.iops == 20_000
    assert tier1.throughput_bytes_per_s is None
    assert (tier1.binding, tier1.effective_iops) == ("iops", 20_000)
    assert of("ibm-powervs-tier1", 100).iops == 1000
    assert of("ibm-powervs-tier0", 100).iops == 2500
    assert of("ibm-powervs-tier0", 200).iops == 5000
    assert of("ibm-powervs-tier3", 100).iops == 300


def test_ibm_power_vs_fixed_5k_is_5000_iops_up_to_200_gb():
    assert of("ibm-powervs-fixed5k", 10).iops == 5000
    assert of("ibm-powervs-fixed5k", 200).iops == 5000
    error = refused("ibm-powervs-fixed5k", 201)
    assert error.field == "size" and "up to 200 GB" in str(error)


def test_an_instance_throughput_cap_limits_a_disk_that_publishes_none():
    result = of("ibm-powervs-tier1", 2000, instance_bytes_per_s_cap=100 * MB, block_size=64 * KiB)
    assert result.throughput_bytes_per_s == 100 * MB
    assert result.binding == "throughput"


@pytest.mark.parametrize(
    ("disk_type", "size", "iops", "bytes_per_s"),
    [
        ("ibm-vpc-general-purpose", 10, 3000, 48 * MB),  # floor 3,000 x 16 KB
        ("ibm-vpc-general-purpose", 1001, 3003, 48_048_000),
        ("ibm-vpc-general-purpose", 13958, 41874, 669_984_000),
        ("ibm-vpc-general-purpose", 13959, 41877, 670 * MB),  # 670.03 -> cap
        ("ibm-vpc-general-purpose", 16000, 48000, 670 * MB),
        ("ibm-vpc-5iops-tier", 599, 3000, 48 * MB),
        ("ibm-vpc-5iops-tier", 601, 3005, 48_080_000),
        ("ibm-vpc-5iops-tier", 9600, 48000, 768 * MB),
        ("ibm-vpc-10iops-tier", 300, 3000, 768 * MB),  # 3,000 x 256 KB
        ("ibm-vpc-10iops-tier", 400, 4000, 1024 * MB),
        ("ibm-vpc-10iops-tier", 4800, 48000, 1024 * MB),
    ],
)
def test_ibm_vpc_profiles_clamp_iops_and_derive_throughput_from_them(disk_type, size, iops, bytes_per_s):
    result = of(disk_type, size)
    assert (result.iops, result.throughput_bytes_per_s) == (iops, bytes_per_s)


# ----------------------------------------------------------------------------- Oracle Cloud


@pytest.mark.parametrize(
    ("disk_type", "size", "on", "iops", "mb_s"),
    [
        ("oci-balanced", 50, TODAY, 3000, 24),  # the vendor's table: 50 GB -> 3,000 IOPS, 24 MB/s
        ("oci-balanced", 416, TODAY, 24960, 199.68),
        ("oci-balanced", 417, TODAY, 25000, 200.16),
        ("oci-balanced", 999, TODAY, 25000, 479.52),
        ("oci-balanced", 1000, TODAY, 25000, 480),
        ("oci-higher-performance", 666, TODAY, 49950, 399.6),
        ("oci-higher-performance", 667, TODAY, 50000, 400.2),
        ("oci-higher-performance", 1133, TODAY, 50000, 679.8),
        ("oci-higher-performance", 1134, TODAY, 50000, 680),
        ("oci-higher-performance", 466, date(2020, 6, 1), 34950, 279.6),
        ("oci-higher-performance", 467, date(2020, 6, 1), 35000, 280.2),
        ("oci-higher-performance", 800, date(2020, 6, 1), 35000, 480),
        ("oci-higher-performance", 1134, date(2020, 6, 1), 35000, 480),
    ],
)
def test_oci_levels_scale_per_gb_to_their_caps_as_published_on_the_date(disk_type, size, on, iops, mb_s):
    result = of(disk_type, size, on=on)
    assert result.iops == iops
    assert result.throughput_bytes_per_s == pytest.approx(mb_s * MB, abs=0.001)


# ----------------------------------------------------------------------------- SolidFire QoS and custom


def test_solidfire_reports_max_and_burst_iops_with_a_60_second_credit():
    result = of("solidfire-qos", iops=5000, burst_iops=8000)
    assert (result.iops, result.burst_iops) == (5000, 8000)
    assert (result.burst_kind, result.burst_seconds) == ("qos", 60)
    assert result.throughput_bytes_per_s is None
    assert of("solidfire-qos", iops=5000).burst_iops is None


def test_solidfire_refuses_qos_values_outside_what_libsf_accepts():
    assert refused("solidfire-qos").field == "iops"
    assert refused("solidfire-qos", iops=99).field == "iops"
    assert refused("solidfire-qos", iops=100_001).field == "iops"
    error = refused("solidfire-qos", iops=5000, burst_iops=4000)
    assert error.field == "burst_iops" and "not below iops" in str(error)
    assert refused("solidfire-qos", iops=5000, burst_iops=100_001).field == "burst_iops"


def test_custom_limits_are_taken_as_typed_per_volume_and_multiplied_by_stripes():
    result = of("custom", iops=4000, bytes_per_s=100 * MB, burst_iops=6000, stripes=2)
    assert (result.iops, result.throughput_bytes_per_s, result.burst_iops) == (8000, 200 * MB, 12000)
    assert result.size is None


def test_custom_with_nothing_typed_has_no_limits_rather_than_an_error():
    result = of("custom", block_size=4096)
    assert (result.iops, result.throughput_bytes_per_s, result.binding) == (None, None, None)


def test_custom_refuses_a_burst_below_the_sustained_limit():
    assert refused("custom", bytes_per_s=100 * MB, burst_bytes_per_s=50 * MB).field == "burst_bytes_per_s"
    assert refused("custom", iops=-5).field == "iops"


# ----------------------------------------------------------------------------- block size, caps, errors


@pytest.mark.parametrize(
    ("block_size", "binding", "effective_iops"),
    [
        (4 * KiB, "iops", 40_000),  # 1.12 GB/s / 4 KiB = 273,437 > 40,000
        (16 * KiB, "iops", 40_000),  # 68,359 > 40,000
        (64 * KiB, "throughput", 17_089.844),  # 1.12 GB/s / 64 KiB
        (MiB, "throughput", 1_068.115),
    ],
)
def test_a_throughput_cap_binds_before_the_iops_cap_at_large_blocks(block_size, binding, effective_iops):
    result = of("alibaba-ultra", 400, stripes=8, block_size=block_size)
    assert (result.binding, result.effective_iops) == (binding, effective_iops)
    expected_bytes = 40_000 * block_size if binding == "iops" else 1_120_000_000
    assert result.effective_throughput_bytes_per_s == pytest.approx(expected_bytes, abs=1)


def test_the_iops_limit_binds_when_both_give_the_same_rate():
    result = of("custom", iops=1000, bytes_per_s=4_096_000, block_size=4096)
    assert (result.binding, result.effective_iops) == ("iops", 1000)


def test_without_a_block_size_nothing_binds():
    result = of("alibaba-ultra", 400)
    assert (result.binding, result.effective_iops, result.effective_throughput_bytes_per_s) == (None, None, None)


def test_burst_rates_at_a_block_size_keep_the_throughput_cap():
    result = of("aws-gp2", 100, block_size=MiB)
    assert result.effective_iops == 128  # 128 MiB/s / 1 MiB, below 300 IOPS
    assert result.effective_burst_iops == 128  # the 3,000 burst cannot beat the 128 MiB/s cap
    assert of("aws-gp2", 100, block_size=4 * KiB).effective_burst_iops == 3000


def test_instance_caps_also_cap_the_burst():
    assert of("aws-gp2", 100, instance_iops_cap=2000).burst_iops == 2000
    capped = of("aws-gp2", 100, instance_iops_cap=200)
    assert (capped.iops, capped.burst_iops, capped.burst_kind) == (200, None, None)


def test_an_unknown_type_is_refused_listing_the_valid_types():
    error = refused("aws-gp4", 100)
    assert error.field == "disk_type"
    assert "aws-gp3" in str(error) and "alibaba-essd-pl1" in str(error) and "custom" in str(error)


def test_a_sized_type_without_a_size_is_refused_naming_its_range():
    error = refused("alibaba-ultra")
    assert error.field == "size" and "20 to 32,768" in str(error)


def test_a_value_the_type_does_not_take_is_refused_instead_of_ignored():
    error = refused("aws-gp2", 100, iops=5000)
    assert error.field == "iops" and "does not take iops" in str(error)
    assert refused("azure-premium-ssd", 100, burst_iops=5000).field == "burst_iops"


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"stripes": 0}, "stripes"),
        ({"stripes": 1.5}, "stripes"),
        ({"instance_iops_cap": 0}, "instance_iops_cap"),
        ({"instance_bytes_per_s_cap": -1}, "instance_bytes_per_s_cap"),
    ],
)
def test_stripes_and_instance_caps_must_be_positive(kw, field):
    assert refused("alibaba-ultra", 400, **kw).field == field


def test_a_block_size_must_be_a_positive_whole_number_of_bytes():
    with pytest.raises(ValueError, match="block_size"):
        of("alibaba-ultra", 400, block_size=0)


def test_the_date_defaults_to_today_and_accepts_a_datetime():
    assert evaluate(Spec("aws-gp3", 100)) == evaluate(Spec("aws-gp3", 100), on=date.today())
    assert of("aws-gp3", 100, on=datetime(2025, 9, 1, 12, 0)).record_id == "aws/gp3@2025-09"


def test_limits_are_json_ready_with_their_source_and_period():
    data = json.loads(json.dumps(of("aws-gp3", 100, block_size=16 * KiB, on=date(2025, 1, 1)).as_dict()))
    assert data["record_id"] == "aws/gp3@2023"
    assert data["effective_until"] == "2025-09-01"
    assert data["source"]["url"].startswith("https://docs.aws.amazon.com/")
    assert data["binding"] == "iops" and data["effective_iops"] == 3000
    assert "16 KiB" in data["notes"]  # the I/O basis of the published IOPS


def test_disk_types_describe_inputs_and_the_range_in_effect_on_a_date():
    kinds = {kind.id: kind for kind in limits.disk_types()}
    assert kinds["aws-gp3"].inputs == {"iops": "optional", "bytes_per_s": "optional"}
    assert kinds["aws-io1"].inputs == {"iops": "required"}
    assert kinds["alibaba-ultra"].inputs == {}
    assert kinds["custom"].size_required is False
    assert (kinds["alibaba-essd-pl0"].size_min, kinds["alibaba-essd-pl0"].size_max) == (1, 65536)
    old = {kind.id: kind for kind in limits.disk_types(on=date(2022, 1, 1))}
    assert (old["alibaba-essd-pl0"].size_min, old["alibaba-essd-pl0"].size_max) == (40, 32768)
    assert [record.id for record in kinds["aws-gp3"].records] == ["aws/gp3@2023", "aws/gp3@2025-09"]


# ----------------------------------------------------------------------------- in the source's own unit


def shown(result: limits.Limits) -> str:
    return limits.rate_text(result.throughput_bytes_per_s, result.total_throughput_unit)


def test_one_ultra_disk_shows_the_140_mb_s_alibaba_publishes_not_134_mib_s():
    result = of("alibaba-ultra", 400)
    assert (result.throughput_unit, result.total_throughput_unit) == ("MB/s", "MB/s")
    assert shown(result) == "140 MB/s"
    assert limits.converted_text(result.throughput_bytes_per_s, "MB/s") == "≈ 133.5 MiB/s"


def test_eight_ultra_stripes_show_1_120_mb_s_with_the_per_disk_step():
    result = of("alibaba-ultra", 400, stripes=8)
    assert shown(result) == "1,120 MB/s"
    assert (result.volume_iops, result.volume_throughput_bytes_per_s) == (5000, 140 * MB)
    steps = limits.breakdown(result)
    assert steps["per_disk"]["throughput"] == {
        "bytes_per_s": 140 * MB, "value": 140, "unit": "MB/s", "text": "140 MB/s"
    }  # fmt: skip
    assert steps["striped"] == {"iops": 40000, "throughput": limits.rate(1120 * MB, "MB/s")}
    assert steps["binding"] == "IOPS-bound below 27.3 KiB blocks, throughput-bound above (1,120 MB/s ÷ 40,000 IOPS)"
    bindings = {at["block_size"]: at["binding"] for at in steps["at_block_sizes"]}
    assert bindings == {"4 KiB": "iops", "16 KiB": "iops", "64 KiB": "throughput", "256 KiB": "throughput",
                        "1 MiB": "throughput"}  # fmt: skip


def test_essd_pl3_at_32768_gib_shows_4000_mb_s_not_3_73_gib_s():
    result = of("alibaba-essd-pl3", 32768)
    assert shown(result) == "4,000 MB/s"
    assert limits.rate(result.throughput_bytes_per_s, result.total_throughput_unit)["value"] == 4000


def test_aws_throughput_stays_in_the_mib_s_aws_publishes():
    assert shown(of("aws-gp2", 500)) == "250 MiB/s"
    assert shown(of("aws-gp3", 100, bytes_per_s=1000 * MiB, iops=4000)) == "1,000 MiB/s"
    assert limits.converted_text(128 * MiB, "MiB/s") == "≈ 134.2 MB/s"


def test_a_small_gp2_volume_bursts_for_1862_s_about_31_min_from_a_full_bucket():
    result = of("aws-gp2", 33)  # baseline 100 IOPS (the floor); 5.4M I/Os / (3,000 - 100) = 1,862 s
    assert (result.iops, result.burst_iops, round(result.burst_seconds)) == (100, 3000, 1862)
    burst = limits.breakdown(result)["burst"]
    assert (burst["kind"], burst["iops"], burst["lasts"]) == ("credit", 3000, "≈ 31 min from a full bucket")


def test_an_instance_cap_is_shown_in_the_unit_it_was_typed_in_and_names_what_it_binds():
    result = of("alibaba-essd-pl2", 1600, stripes=2, instance_iops_cap=60000, instance_bytes_per_s_cap=1000 * MiB)
    assert (result.instance_throughput_unit, result.total_throughput_unit) == ("MiB/s", "MiB/s")
    assert shown(result) == "1,000 MiB/s"  # 2 x 750 MB/s = 1,500 MB/s, capped at the typed 1,000 MiB/s
    rows = {row["label"]: row for row in limits.breakdown(result)["rows"]}
    assert rows["Per disk"]["value"] == "81,800 IOPS · 750 MB/s"
    assert rows["× 2 stripes"]["value"] == "163,600 IOPS · 1,500 MB/s"
    assert (rows["Instance cap"]["value"], rows["Instance cap"]["note"]) == (
        "60,000 IOPS · 1,000 MiB/s", "binds: iops and throughput"
    )  # fmt: skip
    assert of("alibaba-ultra", 400, instance_bytes_per_s_cap=10**9).total_throughput_unit == "MB/s"  # 140 < 1,000


def test_an_instance_cap_below_the_burst_says_it_caps_the_burst_and_that_the_bucket_then_lasts_longer():
    rows = {row["label"]: row for row in limits.breakdown(of("aws-gp2", 33, instance_iops_cap=2000))["rows"]}
    assert rows["Instance cap"]["note"] == "does not bind the baseline; caps the burst"
    assert rows["Burst"]["value"] == "2,000 IOPS, on credits"
    assert rows["Burst"]["note"].endswith("longer under the instance cap")


def test_custom_limits_keep_the_unit_they_were_typed_in():
    assert shown(of("custom", iops=1000, bytes_per_s=300 * MiB)) == "300 MiB/s"
    assert shown(of("custom", iops=1000, bytes_per_s=300 * MB)) == "300 MB/s"
    # 16,384 MB/s is also a whole 15,625 MiB/s: only the unit the person chose tells which they typed.
    assert shown(of("custom", iops=1000, bytes_per_s=16_384 * MB)) == "15,625 MiB/s"
    assert shown(of("custom", iops=1000, bytes_per_s=16_384 * MB, typed_unit="MB/s")) == "16,384 MB/s"


def test_every_type_lists_its_formula_in_the_sources_unit():
    kinds = {kind.id: kind for kind in limits.disk_types()}
    ultra = kinds["alibaba-ultra"].records[-1].formula
    assert ultra[:2] == ["IOPS = min(1,800 + 8 × size, 5,000)", "throughput = min(100 + 0.15 × size, 140) MB/s"]
    gp2 = " ".join(kinds["aws-gp2"].records[0].formula)
    assert "128 MiB/s up to 170 GiB" in gp2 and "credit bucket of 5,400,000 I/Os" in gp2
    assert all(record.formula for kind in kinds.values() for record in kind.records)


# ----------------------------------------------------------------------------- efficiency against the promise


def test_efficiency_of_a_bursting_gp2_is_against_baseline_and_burst_and_within_the_burst_is_not_above():
    eff = limits.Efficiency.of(3009, 100, 3000)  # gp2 at 33 GiB: baseline 100, burst 3,000
    assert eff.text == "3,009 % of baseline, 100 % of burst"
    assert (eff.above, eff.bursting, eff.css) == (False, True, "eff-burst")


def test_a_share_is_cut_at_its_shown_precision_as_fio_cuts_its_iops_so_a_promise_never_reads_met_when_it_was_not():
    assert limits.Efficiency.of(3009.6, 100).text == "3,009 %"  # beside fio's printed IOPS=3009, not 3,010 %
    nearly = limits.Efficiency.of(99.7, 100)
    assert (nearly.text, nearly.above, nearly.css) == ("99 %", False, "")
    just_over = limits.Efficiency.of(100.6, 100)
    assert (just_over.text, just_over.above) == ("100 %", False)  # flagged only when the shown figure is above
    assert limits.Efficiency.of(101.2, 100).above
    assert limits.Efficiency.of(29, 100).text == "29 %"  # 100 * 29 / 100 is 28.999999999999996 in floating point
    assert limits.Efficiency.of(7.56, 100).text == "7.5 %"
    assert limits.Efficiency.of(0.3, 100).text == "0.3 %"


def test_efficiency_above_the_highest_promise_is_flagged_with_separators_never_as_success():
    eff = limits.Efficiency.of(40167, 100, 3000)
    assert eff.text == "40,167 % of baseline, 1,338 % of burst"
    assert eff.above and eff.css == "eff-above"
    assert eff.flag == "above the promise: cache, burst or a wrong spec?"
    plain = limits.Efficiency.of(14540, 1000)
    assert (plain.text, plain.css, plain.above) == ("1,454 %", "eff-above", True)


def test_efficiency_within_the_promise_says_how_far_below():
    assert limits.Efficiency.of(3000, 4000).text == "75 %" and limits.Efficiency.of(3000, 4000).css == "eff-mid"
    assert limits.Efficiency.of(30, 4000).text == "0.7 %"  # 0.75 %, cut
    assert limits.Efficiency.of(None, 4000) is None and limits.Efficiency.of(3000, None) is None
