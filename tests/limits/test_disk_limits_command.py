"""`manage.py disk_limits`: the catalog from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from jobs import limits
from jobs.management.commands.disk_limits import parse_block_size

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str) -> str:
    out = StringIO()
    call_command("disk_limits", *args, stdout=out)
    return out.getvalue()


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "disk_limits", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_json_output_is_one_object_with_the_limits_of_the_design_field_workload():
    data = json.loads(run("alibaba-ultra", "--size", "400", "--stripes", "8", "--block-size", "64k", "--json"))
    assert data["iops"] == 40_000
    assert data["throughput_bytes_per_s"] == 1_120_000_000
    assert data["burst_iops"] is None and data["burst_throughput_bytes_per_s"] is None
    assert data["binding"] == "throughput"
    assert data["block_size_bytes"] == 65_536
    assert data["effective_iops"] == 17_089.844
    assert data["source"]["url"].startswith("https://www.alibabacloud.com/")
    assert (data["disk_type"], data["size"], data["size_unit"], data["stripes"]) == ("alibaba-ultra", 400, "GiB", 8)
    assert data["effective_from"] == "2020-01-01"


def test_json_output_carries_burst_figures_where_published():
    data = json.loads(run("aws-gp2", "--size", "200", "--json"))
    assert (data["iops"], data["burst_iops"]) == (600, 3000)
    assert data["throughput_bytes_per_s"] == 150 * 2**20  # 600 IOPS x 256 KiB without credits
    assert data["burst_throughput_bytes_per_s"] == 250 * 2**20
    assert data["binding"] is None


def test_instance_caps_and_provisioned_values_reach_the_catalog():
    data = json.loads(run("alibaba-essd-pl2", "--size", "1600", "--instance-iops-cap", "60000", "--json"))
    assert data["iops"] == 60_000
    data = json.loads(run("aws-gp3", "--size", "100", "--iops", "6000", "--throughput", "262144000", "--json"))
    assert (data["iops"], data["throughput_bytes_per_s"]) == (6000, 262_144_000)
    data = json.loads(
        run("alibaba-ultra", "--size", "400", "--stripes", "8", "--instance-throughput-cap", "625000000", "--json")
    )
    assert data["throughput_bytes_per_s"] == 625_000_000


def test_the_on_option_picks_the_figures_published_then():
    before = json.loads(run("aws-gp3", "--size", "100", "--on", "2025-08-31", "--json"))
    after = json.loads(run("aws-gp3", "--size", "100", "--on", "2025-09-01", "--json"))
    assert (before["record_id"], after["record_id"]) == ("aws/gp3@2023", "aws/gp3@2025-09")


def test_solidfire_burst_iops_come_from_the_command_line():
    data = json.loads(run("solidfire-qos", "--iops", "5000", "--burst-iops", "8000", "--json"))
    assert (data["iops"], data["burst_iops"], data["burst_seconds"]) == (5000, 8000, 60)


@pytest.mark.parametrize(
    ("text", "size"), [("512", 512), ("4k", 4096), ("64K", 65_536), ("1M", 1_048_576), ("1m", 1_048_576)]
)
def test_block_sizes_read_plain_bytes_or_1024_based_suffixes(text, size):
    assert parse_block_size(text) == size


def test_a_block_size_that_is_not_a_size_is_refused():
    with pytest.raises(CommandError, match="--block-size"):
        parse_block_size("lots")


def test_the_table_shows_grouped_numbers_in_the_sources_unit_and_what_binds():
    text = run("alibaba-ultra", "--size", "400", "--stripes", "8", "--block-size", "64k")
    assert "40,000 IOPS" in text
    assert "1,120 MB/s" in text
    assert "throughput binds" in text
    assert "https://www.alibabacloud.com/" in text
    gp3 = run("aws-gp3", "--size", "100")
    assert "3,000 IOPS" in gp3 and "125 MiB/s" in gp3


def test_the_table_shows_the_burst_and_how_long_it_lasts():
    text = run("aws-gp2", "--size", "100")
    assert "3,000 IOPS" in text
    assert "33.3 min from full" in text  # 5.4M credits / (3,000 - 300) = 2,000 s


def test_list_prints_one_line_per_type_with_its_size_unit_and_range():
    lines = run("--list").splitlines()
    kinds = limits.disk_types()
    assert len(lines) == len(kinds)
    by_type = {line.split()[0]: line for line in lines}
    assert set(by_type) == {kind.id for kind in kinds}
    assert "GiB 20 to 32,768" in by_type["alibaba-ultra"]
    assert "GiB 1 to 65,536" in by_type["alibaba-essd-pl0"]
    assert "GB up to 200" in by_type["ibm-powervs-fixed5k"]
    assert "size not used" in by_type["custom"]


def test_an_unknown_type_exits_2_with_one_line_naming_the_valid_types():
    result = manage("aws-gp4", "--size", "100")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "aws-gp3" in lines[0] and "alibaba-ultra" in lines[0]
    assert result.stdout == ""


def test_a_size_outside_the_published_range_exits_2_with_one_line_naming_the_range():
    result = manage("alibaba-ultra", "--size", "10")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "20 to 32,768 GiB" in lines[0]


def test_an_out_of_bounds_provisioned_value_is_a_command_error_with_status_2():
    with pytest.raises(CommandError) as info:
        run("aws-gp3", "--size", "8", "--iops", "5000")
    assert info.value.returncode == 2
    assert "3,000 to 4,000 IOPS" in str(info.value)
    assert "\n" not in str(info.value)
