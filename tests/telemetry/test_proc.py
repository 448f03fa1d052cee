"""The kernel's counters turned into a second of figures (jobs/telemetry/proc.py): this machine's own /proc read
twice, and diskstats/stat/pressure texts with known deltas whose figures are computed by hand."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobs.telemetry import proc


def _read_real(devices: set[str]) -> proc.Reading:
    texts = {}
    for key, path in proc.FILES.items():
        texts[key] = Path(path).read_text() if Path(path).exists() else None
    return proc.reading(texts, time.time(), devices)


def test_this_machines_own_counters_give_a_second_of_figures():
    device = Path("/proc/diskstats").read_text().split()[2]
    before = _read_real({device})
    busy = time.monotonic() + 0.3
    while time.monotonic() < busy:  # some CPU time in the interval
        pass
    after = _read_real({device})
    found = proc.sample(before, after)
    cpu = found["cpu"]
    assert sum(cpu[k] for k in ("user", "system", "iowait", "steal", "idle")) == pytest.approx(100, abs=1.5)
    assert cpu["busiest"]["busy"] > 0
    assert found["memory"]["total_bytes"] > found["memory"]["available_bytes"] > 0
    assert found["load1"] >= 0
    assert set(found["devices"]) == {device}
    assert set(found["devices"][device]) == {"read_iops", "write_iops", "read_mb_s", "write_mb_s", "queue",
                                              "await_ms", "util"}  # fmt: skip
    if Path("/proc/pressure/io").exists():
        assert set(found["pressure"]) >= {"io_some", "cpu_some", "memory_some"}


def _disk_line(name: str, reads: int, sectors: int, read_ms: int, writes: int, busy_ms: int, weighted: int) -> str:
    # major minor name reads merged sectors ms writes merged sectors ms in-flight busy weighted (+ discard fields)
    return (
        f" 253 0 {name} {reads} 0 {sectors} {read_ms} {writes} 0 {writes * 8} {writes} 0 {busy_ms} {weighted} 0 0 0 0"
    )


def test_a_devices_second_is_computed_as_iostat_computes_it():
    before = proc.reading({"diskstats": _disk_line("vdb", 1000, 8000, 500, 0, 1000, 2000)}, 100.0)
    after = proc.reading({"diskstats": _disk_line("vdb", 3000, 24000, 1500, 100, 1500, 4000)}, 102.0)
    figures = proc.sample(before, after)["devices"]["vdb"]
    # 2,000 reads and 100 writes in 2 s; 16,000 sectors of 512 bytes read; busy 500 ms of 2,000; 2,000 ms weighted.
    assert figures == {"read_iops": 1000.0, "write_iops": 50.0, "read_mb_s": 4.096, "write_mb_s": 0.205,
                       "queue": 1.0, "await_ms": round((1000 + 100) / 2100, 3), "util": 25.0}  # fmt: skip


def test_a_counter_that_went_back_gives_no_figure_and_other_devices_are_left_out():
    text_before = _disk_line("vdb", 1000, 8000, 500, 0, 1000, 2000) + "\n" + _disk_line("vdc", 1, 8, 1, 0, 1, 1)
    before = proc.reading({"diskstats": text_before}, 100.0, {"vdb"})
    assert set(before.disks) == {"vdb"}
    after = proc.reading({"diskstats": _disk_line("vdb", 10, 80, 5, 0, 10, 20)}, 101.0)  # the host rebooted
    assert "devices" not in proc.sample(before, after)


def test_cpu_shares_and_the_busiest_cpu_and_pressure_as_shares_of_the_interval():
    def stat(total: list[int], cpu0: list[int], cpu1: list[int]) -> str:
        return "\n".join(["cpu  " + " ".join(map(str, total)), "cpu0 " + " ".join(map(str, cpu0)),
                          "cpu1 " + " ".join(map(str, cpu1)), "intr 1 2 3"])  # fmt: skip

    def psi(some: int, full: int) -> str:
        return (
            f"some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={full}"
        )

    zero = [0] * 10
    before = proc.reading({"stat": stat(zero, zero[:8], zero[:8]), "pressure_io": psi(0, 0)}, 10.0)
    # 200 ticks: cpu0 fully user (100), cpu1 idle 60, iowait 30, steal 10.
    total = [100, 0, 0, 60, 30, 0, 0, 10, 0, 0]
    after = proc.reading(
        {"stat": stat(total, [100, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 60, 30, 0, 0, 10]),
         "pressure_io": psi(250_000, 100_000)},
        11.0,
    )  # fmt: skip
    found = proc.sample(before, after)
    assert found["cpu"] == {"user": 50.0, "system": 0.0, "iowait": 15.0, "steal": 5.0, "idle": 30.0,
                            "busiest": {"cpu": 0, "busy": 100.0}}  # fmt: skip
    assert found["pressure"] == {"io_some": 25.0, "io_full": 10.0}
    assert "memory" not in found and "load1" not in found  # not read: absent, never guessed
    assert proc.sample(after, after) is None
