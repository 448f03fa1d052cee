"""fio's own view of a run: its cpu line, its disk util lines and the CPU cost per I/O, from real outputs."""

from __future__ import annotations

import json
import re
import resource
import subprocess
from pathlib import Path

import pytest

from jobs.tools import fio, fio_own_view, fio_text
from jobs.tools.summary import ParseError, cpu_us_per_io

FIXTURES = Path(__file__).parent.parent / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_the_text_reports_cpu_line_and_disk_stats_are_kept_as_printed() -> None:
    summary = fio.parse_fio_text(read("fio-3.33-randrw.txt")).summary

    # "  cpu          : usr=4.83%, sys=33.10%, ctx=72885, majf=0, minf=11"
    assert summary["printed"]["cpu"] == {"usr": "4.83%", "sys": "33.10%", "ctx": "72885", "majf": "0", "minf": "11"}
    assert summary["cpu"] == {
        "usr_percent": 4.83,
        "sys_percent": 33.1,
        "ctx": 72885,
        "majf": 0,
        "minf": 11,
        "job_runtime_ms": None,  # the text report does not print fio's clock
    }
    # "  vda: ios=49546/21160, merge=0/0, ticks=1522/539, in_queue=2062, util=69.69%"
    assert summary["printed"]["disk_util"] == [{"name": "vda", "util": "69.69%", "ios": "49546/21160"}]
    assert summary["disk_util"] == [
        {
            "name": "vda",
            "read_ios": 49546,
            "write_ios": 21160,
            "read_merges": 0,
            "write_merges": 0,
            "read_ticks": 1522,
            "write_ticks": 539,
            "in_queue": 2062,
            "util_percent": 69.69,
        }
    ]
    # No clock printed: the I/O runtime (3001 ms) of its one job, over "issued rwts: total=51010,21895,0,0"
    assert summary["cpu_us_per_io"] == pytest.approx((4.83 + 33.1) / 100 * 3001 * 1000 / (51010 + 21895))


def test_fio_3_36s_sector_counts_are_kept_and_nothing_it_did_not_print_is_added() -> None:
    summary = fio.parse_fio_text(read("real/fio-3.40-randrw-rawstor.txt")).summary

    # "  sda: ios=17/117, sectors=4248/1872, merge=0/93, ticks=314/52, in_queue=366, util=1.41%"
    assert summary["disk_util"] == [
        {
            "name": "sda",
            "read_ios": 17,
            "write_ios": 117,
            "read_sectors": 4248,
            "write_sectors": 1872,
            "read_merges": 0,
            "write_merges": 93,
            "read_ticks": 314,
            "write_ticks": 52,
            "in_queue": 366,
            "util_percent": 1.41,
        }
    ]
    assert summary["printed"]["cpu"] == {"usr": "8.54%", "sys": "39.42%", "ctx": "324492", "majf": "0", "minf": "15"}


def test_an_md_devices_aggregate_is_read_from_text_json_and_terse() -> None:
    # Lines as fio's diskutil.c prints an md device with two members (print_disk_util, show_agg_stats,
    # json_array_add_disk_util: fio spells the aggregate's write merges "aggr_write_merge").
    text_line = (
        "    md0: ios=2048/0, merge=0/0, ticks=0/0, in_queue=0, util=0.00%, aggrios=1024/0, aggrmerge=3/0, "
        "aggrticks=410/0, aggrin_queue=410, aggrutil=88.40%\n  vdb: ios=1024/0, merge=3/0, ticks=410/0, in_queue=410, "
        "util=88.40%\n"
    )
    blocks = fio_own_view.text_disk_blocks("Disk stats (read/write):\n" + text_line)
    json_disks, _ = fio_own_view.json_disks(
        [
            {"name": "md0", "read_ios": 2048, "write_ios": 0, "read_merges": 0, "write_merges": 0, "read_ticks": 0,
             "write_ticks": 0, "in_queue": 0, "util": 0.0, "aggr_read_ios": 1024, "aggr_write_ios": 0,
             "aggr_read_merges": 3, "aggr_write_merge": 0, "aggr_read_ticks": 410, "aggr_write_ticks": 0,
             "aggr_in_queue": 410, "aggr_util": 88.4},
        ],
        "the document",
        None,
    )  # fmt: skip
    terse_disks, _ = fio_own_view.terse_disks(
        "md0;2048;0;0;0;0;0;0;0.00%;slaves;1024;0;3;0;410;0;410;88.40%".split(";"), 0
    )

    md0 = {
        "name": "md0",
        **dict.fromkeys(("write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue"), 0),
        "read_ios": 2048,
        "util_percent": 0.0,
        "aggr_read_ios": 1024,
        "aggr_write_ios": 0,
        "aggr_read_merges": 3,
        "aggr_write_merges": 0,
        "aggr_read_ticks": 410,
        "aggr_write_ticks": 0,
        "aggr_in_queue": 410,
        "aggr_util_percent": 88.4,
    }
    assert blocks[0][1][0] == json_disks[0] == terse_disks[0] == md0
    assert blocks[0][1][1]["name"] == "vdb" and "aggr_util_percent" not in blocks[0][1][1]


def test_json_keeps_fios_digits_and_its_clock_and_group_reporting_sums_the_clock() -> None:
    summary = fio.parse_fio_json(read("fio-3.33-numjobs2-group.json")).summary

    # group_reporting over two jobs: "job_runtime" : 6000 is both members' 3000 ms added up (sum_thread_stats)
    assert summary["cpu"] == {
        "usr_percent": 2.733333,
        "sys_percent": 14.633333,
        "ctx": 115043,
        "majf": 0,
        "minf": 21,
        "job_runtime_ms": 6000,
    }
    assert summary["printed"]["cpu"]["usr"] == "2.733333%"
    ios = json.loads(read("fio-3.33-numjobs2-group.json"))["jobs"][0]["write"]["total_ios"]
    assert summary["cpu_us_per_io"] == pytest.approx((2.733333 + 14.633333) / 100 * 6000 * 1000 / ios)


def test_each_client_keeps_its_own_disks_and_all_clients_keeps_every_one() -> None:
    results = {r.label: r.summary for r in fio.fio_json_results(read("clients/fio-3.33-two-clients.json"))}

    assert [d["util_percent"] for d in results["client 127.0.0.2"]["disk_util"]] == [68.498943]
    assert [d["util_percent"] for d in results["client 127.0.0.1"]["disk_util"]] == [68.619247]
    assert [d["host"] for d in results["All clients"]["disk_util"]] == ["127.0.0.2", "127.0.0.1"]
    texts = {r.label: r.summary for r in fio.fio_text_results(read("clients/fio-3.33-two-clients.txt"))}
    assert texts["client 1"]["printed"]["disk_util"] == [{"name": "vda", "util": "62.22%", "ios": "32582/0"}]
    assert texts["All clients"]["printed"]["cpu"]["usr"] == "0.65%"  # fio prints the clients' cpu line too


def test_several_text_entries_print_no_shared_cpu_figure_so_only_the_counts_are_summed() -> None:
    summary = fio.parse_fio_text(read("fio-3.33-numjobs2.txt")).summary

    # Two "cpu          : usr=…" lines (ctx=62950 and 62981): fio's clock for each is not printed, so the
    # group's usr and sys would be a guess.
    assert summary["cpu"] == {
        "usr_percent": None,
        "sys_percent": None,
        "ctx": 62950 + 62981,
        "majf": 0,
        "minf": 12 + 11,
        "job_runtime_ms": None,
    }
    assert summary["printed"]["cpu"] is None
    assert summary["cpu_us_per_io"] is None


def test_terse_lines_carry_the_cpu_and_disk_fields_in_every_version() -> None:
    v3 = fio.parse_fio_terse(read("fio-3.33-randrw.terse")).summary
    v5 = fio.fio_terse_results(read("real/fio-3.33-two-write-groups-v5.terse"))[1].summary
    v2 = fio.fio_terse_results(read("real/fio-3.33-two-write-groups-v2.terse"))[1].summary

    assert v3["printed"]["cpu"] == {"usr": "5.366667%", "sys": "30.733333%", "ctx": "75226", "majf": "0", "minf": "14"}
    assert v3["printed"]["disk_util"] == [{"name": "vda", "util": "66.80%", "ios": "50605/21716"}]
    assert v5["cpu"]["sys_percent"] == 18.367347 and v5["disk_util"][0]["util_percent"] == 69.08
    assert v2["cpu"]["sys_percent"] == 17.44186 and v2["disk_util"] == []  # version 2 has no disk fields
    assert v3["cpu_us_per_io"] is None  # a terse line does not say how many jobs it stands for


def test_the_cost_per_io_is_none_whenever_an_input_is_missing() -> None:
    cpu = fio_own_view.make_cpu(10.0, 30.0, 1, 0, 0, 2000)

    assert cpu_us_per_io(cpu, 1000, runtime_s=None, processes=None) == pytest.approx(0.4 * 2000 * 1000 / 1000)
    assert cpu_us_per_io({**cpu, "job_runtime_ms": None}, 1000, runtime_s=1.0, processes=2) == pytest.approx(800)
    assert cpu_us_per_io({**cpu, "job_runtime_ms": None}, 1000, runtime_s=1.0, processes=None) is None
    assert cpu_us_per_io({**cpu, "usr_percent": None}, 1000, runtime_s=1.0, processes=1) is None
    assert cpu_us_per_io(cpu, 0, runtime_s=1.0, processes=1) is None
    assert cpu_us_per_io(None, 1000, runtime_s=1.0, processes=1) is None


@pytest.mark.usefixtures("fio_installed")
def test_the_cost_per_io_of_a_real_run_is_fios_own_cpu_time_over_its_ios(tmp_path: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = subprocess.run(
        ["fio", "--name=cost", f"--filename={tmp_path / 'file'}", "--size=8M", "--rw=randread", "--bs=4k",
         "--ioengine=psync", "--numjobs=2", "--group_reporting", "--time_based", "--runtime=1",
         "--output-format=json"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    job = json.loads(output[output.index("{") :])["jobs"][0]
    summary = fio.parse_fio_json(output).summary

    ios = job["read"]["total_ios"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1000
    assert summary["cpu_us_per_io"] == pytest.approx(cpu_s * 1e6 / ios)
    # Two members ran for about a second each: fio's clock is their sum, not the group's runtime.
    assert job["job_runtime"] >= 2 * job["read"]["runtime"] - 50
    # The CPU time the figure stands for is at most what the kernel charged to fio's processes (its parent and
    # helper thread add their own), give or take getrusage's millisecond rounding.
    charged_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert 0 < cpu_s <= charged_s + 0.01


def test_a_disk_count_that_is_not_a_whole_number_is_refused_naming_it():
    """fio prints a disk line's counts as whole numbers: a report saying "merge=0.00/0" is not fio's (found by the
    bad-input fuzzing of a real fio 2.15 report)."""
    text = (FIXTURES / "fio-2.15-randrw.txt").read_text()
    bad = re.sub(r"merge=[0-9]+/", "merge=0.00/", text, count=1)
    with pytest.raises(ParseError, match=r"merge=0\.00 is not a whole number, as fio prints a count"):
        fio_text.fio_text_results(bad)
