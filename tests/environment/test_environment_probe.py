"""The real environment probe on this machine's loop devices (root; the `lab` fixture), run with sh as the host
runs it: a partition names the parent whose queue it uses, a directory on a mounted device gets the filesystem
and that device's queue, a remount's new options show as a change, and nothing on the device changes."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

from jobs import environment
from tests.loops import Lab, partitioned_loop, sh, sha256


def probe(target: str | Path, kind: str) -> dict:
    script = environment.probe_script(str(target), kind)
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return environment.parse_report(result.stdout)


def sysfs(name: str, setting: str) -> str:
    return Path(f"/sys/block/{name}/queue/{setting}").read_text().strip()


def test_a_partition_is_probed_with_its_parents_queue_and_left_unchanged(lab: Lab) -> None:
    device = partitioned_loop(lab)
    parent = Path(device).name
    before = sha256(f"{device}p1")
    found = probe(f"{device}p1", "block")
    assert found["complete"] and found["kernel"] == platform.release()
    assert found["device"]["name"] == f"{parent}p1" and found["device"]["partition_of"] == parent
    assert found["device"]["queue_name"] == parent
    assert found["device"]["nr_requests"] == int(sysfs(parent, "nr_requests"))
    assert found["device"]["size_bytes"] == int(Path(f"/sys/class/block/{parent}p1/size").read_text()) * 512
    assert sha256(f"{device}p1") == before


def test_a_directory_gets_its_filesystem_and_the_queue_of_the_device_under_it(lab: Lab) -> None:
    device = lab.loop("fs")
    sh("mkfs.ext4", "-q", device)
    mountpoint = lab.mount(device, "-o", "noatime")
    (mountpoint / "bench").mkdir()
    first = probe(mountpoint / "bench", "directory")
    assert first["filesystem"]["type"] == "ext4" and first["filesystem"]["source"] == device
    assert first["filesystem"]["mount"] == str(mountpoint) and "noatime" in first["filesystem"]["options"]
    assert first["device"]["name"] == Path(device).name
    assert first["device"]["read_ahead_kb"] == int(sysfs(Path(device).name, "read_ahead_kb"))

    sh("mount", "-o", "remount,strictatime", str(mountpoint))
    second = probe(mountpoint / "bench", "directory")
    changes = environment.environment_changes(first, second)
    assert changes == [f"mount options {first['filesystem']['options']} → {second['filesystem']['options']}"]
    assert "noatime" not in second["filesystem"]["options"]
