"""A fio profile that preconditions with a fill, and real fio run on the job file benchweb builds for it: what the
preconditioning tests share."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jobs.tools import fio, fio_fill

MiB = 2**20
RUN_DIR = "/home/bench/.benchweb/runs/3f2a4c1e-8b7d-4e2f-9a6b-1c2d3e4f5a6b"
RUN_ID = RUN_DIR.rsplit("/", 1)[1]


def fill_params(**changes) -> dict:
    params = {
        "tool": "fio", "rw": "randread", "block_size_bytes": 4096, "iodepth": 1, "jobs": 1, "runtime_s": 1,
        "time_based": True, "ramp_time_s": 0, "ioengine": "psync", "direct": False, "size_bytes": 16 * MiB,
        "read_percent": 100, "extra_options": {}, "precondition": "fill", "precondition_passes": 2,
    }  # fmt: skip
    return params | changes


def run_fio(tmp_path: Path, params: dict, *, fill_rate: str = "") -> str:
    """Real fio on the job file benchweb builds for a directory in tmp_path; fill_rate slows the fill down so
    that fio prints status documents while it runs."""
    target = tmp_path / "target"
    target.mkdir()
    job = fio.build_fio_job(params, str(target), "directory", str(tmp_path / RUN_ID), readonly=False)
    text = job.jobfile
    if fill_rate:
        text = text.replace(
            f"[{fio_fill.JOB_PREFIX}{RUN_ID}]\n", f"[{fio_fill.JOB_PREFIX}{RUN_ID}]\nrate={fill_rate}\n"
        )
    (tmp_path / "job.fio").write_text(text)
    output = tmp_path / "result.json"
    subprocess.run(["fio", "--output-format=json", "--status-interval=1", f"--output={output}",
                    str(tmp_path / "job.fio")], check=True, capture_output=True, timeout=60)  # fmt: skip
    assert list(target.iterdir()) == []  # the measured job removed the files the fill left for it
    return output.read_text()
