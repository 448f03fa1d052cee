"""Real fio outputs from public repositories and docs (tests/fixtures/real/README.md names each source) import
with the numbers they print.

Every expected value is worked out by hand from the file's own text, and written as that arithmetic: IOPS are
fio's issued I/O count over its runtime ("issued rwts: total=325098,..." and "(1270MiB/10001msec)" give
325098 / 10.001 s), or the printed figure where no count is printed; bandwidths are the printed figure in its
unit (fio < 3 "KB" = 1024 bytes, "MiB" = 1024², "MB" = 1000²); runtimes are one group's, never a sum.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.tools import detect
from jobs.tools.summary import ParseError

REAL = Path(__file__).parent.parent / "fixtures" / "real"
KIB, MIB, GIB = 1024, 1024**2, 1024**3


def read(name: str) -> str:
    return (REAL / name).read_text()


def results(name: str) -> list[Any]:
    return detect.parse_all(read(name))


def figures(result: Any, direction: str) -> tuple[float, float]:
    stats = result.summary[direction]
    return stats["iops"], stats["bw_bytes_per_s"]


def test_every_real_output_is_detected_and_imports() -> None:
    names = sorted(p.name for p in REAL.iterdir() if p.suffix in (".txt", ".json", ".terse"))

    assert len(names) >= 15
    for name in names:
        assert detect.parse_all(read(name)), name


# --- fio 2.0 ----------------------------------------------------------------------------------------------


def test_fio_2_0_15_text_with_blanks_before_commas_and_a_bandwidth_in_bytes() -> None:
    [result] = results("fio-2.0.15-iometer-randrw.txt")
    summary = result.summary

    # "issued    : total=r=54217/w=13770/d=0" over "runt=318686msec"; "bw=1023.3KB/s" (KB = 1024), "bw=269100 B/s"
    assert figures(result, "read") == pytest.approx((54217 / 318.686, 1023.3 * KIB))
    assert figures(result, "write") == pytest.approx((13770 / 318.686, 269100))
    assert summary["runtime_s"] == 318.686
    # "clat (usec): min=22 , max=1805.8K, avg=300904.66"; percentiles in msec: 50.00th=[  219], 99.90th=[ 1614]
    assert summary["read"]["clat_us"] == pytest.approx(
        {
            "mean": 300904.66,
            "max": 1805800,
            "p50": 219000,
            "p90": 652000,
            "p95": 881000,
            "p99": 1319000,
            "p99_9": 1614000,
        }
    )
    assert summary["write"]["clat_us"]["max"] == pytest.approx(1653300)
    assert summary["tool_version"] == "2.0.15"
    assert summary["block_size_bytes"] is None  # bs=512-64K: no one block size
    assert summary["read_percent"] is None  # the text report does not print rwmixread
    assert summary["printed"]["read"] == {"iops": "170", "bw": "1023.3KB/s", "runtime": "318686msec"}
    assert summary["printed"]["write"] == {"iops": "43", "bw": "269100 B/s", "runtime": "318686msec"}
    assert summary["workload"] == {
        "rw": "randrw",
        "block_size": "512-64K/512-64K/512-64K",
        "iodepth": 64,
        "numjobs": 1,
        "read_percent": None,
        "ioengine": "libaio",
    }


def test_fio_2_6_client_stats_json_with_only_all_clients_and_a_mixed_direction() -> None:
    [result] = results("fio-2.6-client-stats-mixed.json")
    summary = result.summary

    # "mixed": "io_bytes" : 2021176 (KiB before fio 2.20), "runtime" : 121363, "total_ios" : 273369
    assert summary["total"] == pytest.approx({"iops": 273369 / 121.363, "bw_bytes_per_s": 2021176 * KIB / 121.363})
    assert (summary["read"], summary["write"]) == (None, None)
    assert summary["runtime_s"] == 121.363
    assert summary["read_percent"] is None  # no "job options": rw is unknown
    assert summary["printed"]["total"] == {"iops": "2252.49", "bw": "16653 KiB/s", "runtime": "121363 ms"}
    assert result.label == ""


# --- fio 3.x text -----------------------------------------------------------------------------------------


def test_fio_3_1_text_with_issued_rwt_and_the_command_line_above() -> None:
    [result] = results("fio-3.1-write-vps-comparison.txt")
    summary = result.summary

    # "issued rwt: total=0,1048576,0," (3.1 spelling) over "(4096MiB/341704msec)"; "BW=11.0MiB/s"
    assert figures(result, "write") == pytest.approx((1048576 / 341.704, 11.0 * MIB))
    assert summary["read"] is None
    assert summary["runtime_s"] == 341.704
    assert summary["write"]["clat_us"] == pytest.approx(
        {"mean": 1294.12, "max": 45445, "p50": 1188, "p90": 1369, "p95": 1467, "p99": 13435, "p99_9": 18482}
    )
    assert (summary["block_size_bytes"], summary["read_percent"]) == (4096, 0.0)
    assert summary["printed"]["write"] == {
        "iops": "3068",
        "bw": "11.0MiB/s",
        "bw_alt": "12.6MB/s",
        "runtime": "341704msec",
    }
    assert summary["workload"] == {
        "rw": "write",
        "block_size": "4096B",
        "iodepth": 4,
        "numjobs": 1,
        "read_percent": 0.0,
        "ioengine": "libaio",
    }


def test_fio_3_40_text_with_nanosecond_percentiles() -> None:
    [result] = results("fio-3.40-randrw-rawstor.txt")
    summary = result.summary

    # "issued rwts: total=325098,324727,0,0", "(1270MiB/10001msec)", "BW=127MiB/s" both ways
    assert figures(result, "read") == pytest.approx((325098 / 10.001, 127 * MIB))
    assert figures(result, "write") == pytest.approx((324727 / 10.001, 127 * MIB))
    # read "clat (nsec): min=1233, max=137125, avg=3180.80"; "50.00th=[ 2160]" ns
    assert summary["read"]["clat_us"]["mean"] == pytest.approx(3.1808)
    assert summary["read"]["clat_us"]["max"] == pytest.approx(137.125)
    assert summary["read"]["clat_us"]["p50"] == pytest.approx(2.16)
    # write "clat (usec): ... max=846, avg=26.61" but "clat percentiles (nsec)": 99.00th=[40192]
    assert summary["write"]["clat_us"]["mean"] == pytest.approx(26.61)
    assert summary["write"]["clat_us"]["p99"] == pytest.approx(40.192)
    assert summary["printed"]["read"]["iops"] == "32.5k"
    assert summary["runtime_s"] == 10.001


def test_fio_3_40_json_of_the_same_run_agrees_and_keeps_fios_digits() -> None:
    [result] = results("fio-3.40-randrw-rawstor.json")
    summary = result.summary

    assert figures(result, "read") == pytest.approx((325098 / 10.001, 1331601408 / 10.001))
    assert figures(result, "write") == pytest.approx((324727 / 10.001, 1330081792 / 10.001))
    assert summary["read"]["clat_us"]["mean"] == pytest.approx(3180.799334 / 1000)
    assert summary["tool_version"] == "3.40"
    assert (summary["block_size_bytes"], summary["read_percent"], summary["runtime_s"]) == (4096, 50.0, 10.001)
    assert summary["printed"]["read"] == {
        "iops": "32506.549345",
        "bw": "130026 KiB/s",
        "bw_alt": "133146826 B/s",
        "runtime": "10001 ms",
    }
    assert summary["workload"] == {
        "rw": "randrw",
        "block_size": "4k",
        "iodepth": 1,
        "numjobs": 1,
        "read_percent": 50.0,
        "ioengine": "librawstor",
    }


# --- several groups: one result each, never summed ---------------------------------------------------------


def test_two_stonewalled_groups_are_two_results_each_with_its_own_runtime() -> None:
    first, second = results("fio-3.x-two-groups-rawstor.txt")

    # group 0: "issued rwts: total=149322,0,0,0" in 10001 ms; group 1: "total=0,97712,0,0" in 10001 ms
    assert figures(first, "read") == pytest.approx((149322 / 10.001, 58.3 * MIB))
    assert first.summary["write"] is None
    assert figures(second, "write") == pytest.approx((97712 / 10.001, 38.2 * MIB))
    assert second.summary["read"] is None
    assert (first.summary["runtime_s"], second.summary["runtime_s"]) == (10.001, 10.001)  # not 20.002
    assert (first.label, second.label) == ("group 0", "group 1")
    assert (first.summary["printed"]["read"]["iops"], second.summary["printed"]["write"]["iops"]) == ("14.9k", "9770")


def test_a_job_file_with_two_write_groups_gives_two_write_results_reading_0_percent() -> None:
    text_results = results("fio-3.33-two-write-groups.txt")
    json_results = results("fio-3.33-two-write-groups.json")

    # text: "(4096KiB/12msec)" with "total=0,64,0,0"; "(4096KiB/125msec)" with "total=0,1024,0,0"
    assert [figures(r, "write") for r in text_results] == [
        pytest.approx((64 / 0.012, 333 * MIB)),
        pytest.approx((1024 / 0.125, 32.0 * MIB)),
    ]
    # json: "total_ios" : 64 in "runtime" : 10, "io_bytes" : 4194304; 1024 in 60
    assert [figures(r, "write") for r in json_results] == [
        pytest.approx((64 / 0.010, 4194304 / 0.010)),
        pytest.approx((1024 / 0.060, 4194304 / 0.060)),
    ]
    for group in (*text_results, *json_results):
        assert group.summary["read_percent"] == 0.0
        assert group.summary["read"] is None
    assert [r.summary["runtime_s"] for r in text_results] == [0.012, 0.125]
    assert [r.summary["runtime_s"] for r in json_results] == [0.010, 0.060]
    assert [r.summary["block_size_bytes"] for r in text_results] == [65536, 4096]
    assert [r.label for r in json_results] == ["group 0 (write)", "group 1 (randwrite)"]
    assert [r.summary["workload"]["block_size"] for r in json_results] == ["64k", "4k"]


def test_two_write_groups_of_json_without_job_options_do_not_read_100_percent() -> None:
    """fio 2.0-2.1 JSON has no "job options"; the parser took the missing rw for fio's default, read."""
    doc = json.loads(read("fio-3.33-two-write-groups.json"))
    for job in doc["jobs"]:
        del job["job options"]

    for group in detect.parse_all(json.dumps(doc)):
        assert group.summary["read_percent"] is None
        assert group.summary["write"] is not None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # version 2: write block at field 46 (1-based): io KiB, bw KiB/s, iops, runtime ms
        ("fio-3.33-two-write-groups-v2.terse", [(3764, 4096 * KIB / 0.017, 0.017), (11770, 4096 * KIB / 0.087, 0.087)]),
        # version 4: write block at field 47
        ("fio-3.33-two-write-groups-v4.terse", [(9142, 4096 * KIB / 0.007, 0.007), (11770, 4096 * KIB / 0.087, 0.087)]),
        # version 5: write block at field 53 (each direction 6 fields longer)
        ("fio-3.33-two-write-groups-v5.terse", [(4266, 4096 * KIB / 0.015, 0.015), (10343, 4096 * KIB / 0.099, 0.099)]),
    ],
)
def test_terse_versions_2_4_and_5_give_one_result_per_group(name: str, expected: list[tuple[float, ...]]) -> None:
    groups = results(name)

    assert [(*figures(r, "write"), r.summary["runtime_s"]) for r in groups] == [pytest.approx(e) for e in expected]
    assert [r.label for r in groups] == ["group 0", "group 1"]
    assert all(r.summary["read"] is None for r in groups)


# --- client/server -----------------------------------------------------------------------------------------


def test_client_server_json_gives_each_client_and_all_clients() -> None:
    one, two, every = results("fio-3.33-client-server-two-servers.json")

    assert [r.label for r in (one, two, every)] == ["client 127.0.0.1", "client 127.0.0.2", "All clients"]
    # "total_ios" : 11206 / 11220 / 22426, each in "runtime" : 1001
    assert figures(one, "read") == pytest.approx((11206 / 1.001, 45899776 / 1.001))
    assert figures(two, "read") == pytest.approx((11220 / 1.001, 45957120 / 1.001))
    assert figures(every, "read") == pytest.approx((22426 / 1.001, 91856896 / 1.001))
    assert every.summary["runtime_s"] == 1.001  # the clients ran together: not 2.002
    assert every.summary["processes"] == 2
    assert every.summary["workload"]["rw"] == "randread"  # from the clients: "All clients" prints no options
    assert every.summary["printed"]["read"]["iops"] == "22403.596404"
    assert detect.parse_output(read("fio-3.33-client-server-two-servers.json")).label == "All clients"


def test_client_server_text_gives_each_client_and_all_clients() -> None:
    one, two, every = results("fio-3.33-client-server-two-servers.txt")

    assert [r.label for r in (one, two, every)] == ["client 1", "client 2", "All clients"]
    # "issued rwts: total=9088,..." / "total=9133,..." / "total=18221,..." in 1001 ms
    assert figures(one, "read") == pytest.approx((9088 / 1.001, 35.5 * MIB))
    assert figures(two, "read") == pytest.approx((9133 / 1.001, 35.6 * MIB))
    # "All clients" prints "BW=71.1Mi (74.6M)": MiB/s without the B/s
    assert figures(every, "read") == pytest.approx((18221 / 1.001, 71.1 * MIB))
    assert every.summary["printed"]["read"] == {
        "iops": "18.2k",
        "bw": "71.1Mi",
        "bw_alt": "74.6M",
        "runtime": "1001msec",
    }
    assert every.summary["runtime_s"] == 1.001


def test_an_all_clients_section_from_a_vendor_doc() -> None:
    [result] = results("fio-3.20-all-clients-weka.txt")

    # "issued rwts: total=9033447,0,0,0" over "(8822GiB/300044msec)"; "BW=29.4Gi (31.6G)"
    assert figures(result, "read") == pytest.approx((9033447 / 300.044, 29.4 * GIB))
    assert result.summary["runtime_s"] == 300.044
    assert result.summary["processes"] == 16
    assert result.summary["read"]["clat_us"]["mean"] == pytest.approx(16982.89)
    assert result.summary["printed"]["read"] == {
        "iops": "30.1k",
        "bw": "29.4Gi",
        "bw_alt": "31.6G",
        "runtime": "300044msec",
    }


def test_pasted_all_clients_lines_of_several_runs_are_one_result_each() -> None:
    first, second = results("fio-3.x-all-clients-grep-kubuculum.txt")
    runs = results("fio-3.x-all-clients-simple-fio.txt")

    # "read: IOPS=3025, BW=23.6Mi (24.8M)(2837MiB/120012msec)", then "write: ..." in 120022 ms; no issued counts
    assert figures(first, "read") == pytest.approx((3025, 23.6 * MIB))
    assert figures(second, "write") == pytest.approx((3025, 23.6 * MIB))
    assert (first.summary["runtime_s"], second.summary["runtime_s"]) == (120.012, 120.022)
    assert (first.label, second.label) == ("All clients", "All clients #2")
    # "IOPS=29.5k, BW=7375Mi", "IOPS=29.2k, BW=7305Mi", "IOPS=28.1k, BW=7021Mi", each in 60001 ms
    assert [figures(r, "read") for r in runs] == [
        pytest.approx((29500, 7375 * MIB)),
        pytest.approx((29200, 7305 * MIB)),
        pytest.approx((28100, 7021 * MIB)),
    ]
    assert [r.summary["read"]["clat_us"]["mean"] for r in runs] == [394.05, 396.89, 410.07]


# --- excerpts ----------------------------------------------------------------------------------------------


def test_only_run_status_lines_are_refused_saying_what_is_missing() -> None:
    """ceph tiobench pastes quote only the "Run status group" lines: bandwidth, but no IOPS at all."""
    text = (
        "Run status group 0 (all jobs):\n"
        "  WRITE: bw=174KiB/s (179kB/s), 174KiB/s-174KiB/s (179kB/s-179kB/s), io=31.0MiB (32.5MB), "
        "run=182028-182028msec\n"
    )

    with pytest.raises(ParseError, match="Run status group"):
        detect.parse_all(text)


def test_fio_2_2_10_json_without_job_options_reads_no_rw_and_no_block_size() -> None:
    [result] = results("fio-2.2.10-write-cloud-doc.json")
    summary = result.summary

    # "write": "io_bytes" : 37500272 (KiB), "runtime" : 600008, "total_ios" : 9374944
    assert figures(result, "write") == pytest.approx((9374944 / 600.008, 37500272 * KIB / 600.008))
    assert summary["read"] is None
    # "clat" in µs: "mean" : 8151.19, "max" : 261110, "50.000000" : 8160, "99.900000" : 14912
    assert summary["write"]["clat_us"] == pytest.approx(
        {"mean": 8151.19, "max": 261110, "p50": 8160, "p90": 8256, "p95": 8256, "p99": 8640, "p99_9": 14912}
    )
    # no "job options": neither fio's default rw (read: 100 %) nor its default bs (4k) is assumed
    assert (summary["read_percent"], summary["block_size_bytes"]) == (None, None)
    assert summary["printed"]["write"] == {"iops": "15624.70", "bw": "62499 KiB/s", "runtime": "600008 ms"}


def test_fio_2_0_15_text_and_terse_of_one_rw_job() -> None:
    [text] = results("fio-2.0.15-rw-cloudbench.txt")
    [terse] = results("fio-2.0.15-rw-cloudbench.terse")

    # text: "issued : total=r=4847/w=4803/d=0" in "runt= 10002msec", "bw=7753.7KB/s", "bw=7683.3KB/s"
    assert figures(text, "read") == pytest.approx((4847 / 10.002, 7753.7 * KIB))
    assert figures(text, "write") == pytest.approx((4803 / 10.002, 7683.3 * KIB))
    assert text.summary["block_size_bytes"] == 16384  # "bs=16K-16K/16K-16K/16K-16K"
    assert text.summary["write"]["clat_us"]["p99_9"] == 3952
    # terse v3 (a separate run): read "77968;7796;487;10001", write "76640;7663;478;10001"
    assert figures(terse, "read") == pytest.approx((487, 77968 * KIB / 10.001))
    assert figures(terse, "write") == pytest.approx((478, 76640 * KIB / 10.001))
    # read clat "555;2648;720.394213;198.444542", then "50.000000%=676"
    assert terse.summary["read"]["clat_us"]["mean"] == pytest.approx(720.394213)
    assert terse.summary["read"]["clat_us"]["p50"] == 676
    assert terse.summary["tool_version"] == "2.0.15"


def test_fio_3_25_odd_block_size_and_sync_percentiles_that_are_not_clat() -> None:
    [result] = results("fio-3.25-fdatasync-bs2300-k8s-homelab.txt")
    summary = result.summary

    # "issued rwts: total=0,10029,0,0" in 4328 ms; "BW=5205KiB/s"
    assert figures(result, "write") == pytest.approx((10029 / 4.328, 5205 * KIB))
    assert summary["block_size_bytes"] == 2300
    # "clat percentiles (nsec)": 99.00th=[23936]; the "sync percentiles (usec)" after it are not clat
    assert summary["write"]["clat_us"]["p99"] == pytest.approx(23.936)
    assert summary["workload"]["block_size"] == "2300B"


def test_a_summary_line_quoted_with_its_command_line_is_a_partial_result() -> None:
    """The excerpt as people quote it, cut from a real report: the command and its summary line."""
    lines = read("fio-3.1-write-vps-comparison.txt").splitlines()
    quoted = f"{lines[0]}\n{lines[7]}\n"  # "./fio --filename=... --blocksize=4K ..." and "  write: IOPS=3068, ..."

    [result] = detect.parse_all(quoted)
    summary = result.summary

    assert result.format == "fio-excerpt"
    assert result.partial == "only fio's summary line and the fio command line: no latency."
    # "(4096MiB/341704msec)" is the most precise figure (±0.5 MiB of 4096): 4096 MiB ÷ 4096 B ÷ 341.704 s, the
    # 1048576 I/Os the full report's "issued rwt" line counts; "IOPS=3068" (±0.5) and BW=11.0MiB/s less so
    assert figures(result, "write") == pytest.approx((1048576 / 341.704, 11.0 * MIB))
    assert result.diagnostics == [
        "write IOPS 3068.7 is 4096MiB ÷ 4096 B ÷ 341704 ms (the block size from the fio command line); fio printed "
        "IOPS=3068, rounded."
    ]
    assert summary["runtime_s"] == 341.704
    assert summary["workload"] == {
        "rw": "write",
        "block_size": "4K",
        "iodepth": 4,
        "numjobs": None,
        "read_percent": 0.0,
        "ioengine": "libaio",
    }
    assert (summary["block_size_bytes"], summary["direct"]) == (4096, True)


def test_fio_2_2_8_five_groups_with_unified_mixed_reporting_are_five_results() -> None:
    groups = results("fio-2.2.8-five-groups-mixed-hdd.txt")

    assert [r.label for r in groups] == [
        "group 0 (randwrite)",
        "group 1 (randwrite)",
        "group 2 (randread)",
        "group 3 (write)",
        "group 4 (read)",
    ]
    # "mixed: io=59264KB, bw=1967.8KB/s, iops=491, runt= 30128msec" with "issued : total=r=14816/w=0/d=0", ...
    assert [(r.summary["total"]["iops"], r.summary["total"]["bw_bytes_per_s"]) for r in groups] == [
        pytest.approx((14816 / 30.128, 1967.8 * KIB)),
        pytest.approx((14787 / 30.145, 1962.2 * KIB)),
        pytest.approx((13441 / 30.142, 1783.8 * KIB)),
        pytest.approx((4814 / 30.002, 164307 * KIB)),
        pytest.approx((4800 / 30.006, 163807 * KIB)),
    ]
    # each group's own runtime; the old parser stored one result of 150.423 s
    assert [r.summary["runtime_s"] for r in groups] == [30.128, 30.145, 30.142, 30.002, 30.006]
    assert [r.summary["read_percent"] for r in groups] == [0.0, 0.0, 100.0, 0.0, 100.0]
    assert [r.summary["processes"] for r in groups] == [32, 32, 32, 1, 1]  # "(groupid=0, jobs=32)"
    assert [r.summary["block_size_bytes"] for r in groups] == [4096, 4096, 4096, 1048576, 1048576]
    assert [r.summary["workload"]["iodepth"] for r in groups] == [1, 2, 1, 2, 2]
    assert groups[0].summary["printed"]["total"] == {"iops": "491", "bw": "1967.8KB/s", "runtime": "30128msec"}
    # "clat (msec): min=52, max=161, avg=64.85"; "50.00th=[   64]" msec
    assert groups[0].summary["total"] == {"iops": pytest.approx(14816 / 30.128), "bw_bytes_per_s": 1967.8 * KIB}
    assert (groups[0].summary["read"], groups[0].summary["write"]) == (None, None)


def test_a_text_report_printed_at_each_status_interval_is_read_from_its_last_printing() -> None:
    [result] = results("fio-3.33-status-interval.txt")

    # three printings (891, 1891, 2004 ms); the last: "issued rwts: total=12956,0,0,0", "(50.6MiB/2004msec)"
    assert figures(result, "read") == pytest.approx((12956 / 2.004, 25.3 * MIB))
    assert result.summary["runtime_s"] == 2.004  # not 891 + 1891 + 2004 ms
    assert result.diagnostics == ["The report is printed 3 times (--status-interval); the last printing is read."]
