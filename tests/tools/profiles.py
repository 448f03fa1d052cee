"""A tool profile's parameters, as a Profile gives them to jobs/tools/ (fio's and ndisk64's), with the fields a test
changes: what the tool tests and the remote path tests share."""

from __future__ import annotations


def fio_profile(**changes: object) -> dict:
    params = {
        "tool": "fio",
        "block_size_bytes": 4096,
        "runtime_s": 60,
        "direct": True,
        "read_percent": 70,
        "jobs": 1,
        "size_bytes": 1 << 30,
        "rw": "randrw",
        "iodepth": 32,
        "time_based": True,
        "ramp_time_s": 5,
        "ioengine": "libaio",
        "extra_options": {},
    }
    return params | changes


def ndisk_profile(**changes: object) -> dict:
    params = {
        "tool": "ndisk64",
        "pattern": "random",
        "block_size_bytes": 4096,
        "runtime_s": 60,
        "direct": True,
        "read_percent": 50,
        "jobs": 4,
        "size_bytes": 32 << 20,
    }
    return params | changes
