"""The environment provenance and the ESSD PL3 recipe end to end: a real sshd, a real worker, real fio, loop
devices (the `lab` fixture; root). The cloud metadata service cannot exist here: only the probe sent is checked."""

from __future__ import annotations

import contextlib
import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs import environment
from jobs.models import Disk, Run
from jobs.runs import queueing
from tests.builders import quick_profile, team_with_host, wait_final
from tests.test_safety import Lab

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def sysfs(device: str, name: str) -> str:
    return Path(f"/sys/block/{Path(device).name}/queue/{name}").read_text().strip()


@contextlib.contextmanager
def queue_setting(device: str, name: str, value: str) -> Iterator[None]:
    """Set a queue setting of a loop device for the block, and put the old value back afterwards."""
    path = Path(f"/sys/block/{Path(device).name}/queue/{name}")
    before = path.read_text().strip()
    if name == "scheduler":
        before = environment.probe.selected_scheduler(before) or "none"
    path.write_text(value)
    try:
        yield
    finally:
        path.write_text(before)


def queue_cpu_lists(device: str) -> list[str]:
    queues = sorted(Path(f"/sys/block/{Path(device).name}/mq").iterdir(), key=lambda q: int(q.name))
    return [(q / "cpu_list").read_text().strip() for q in queues]


def block_disk(host, device: str) -> Disk:
    return Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK, disk_type="custom")


def reads(team, **fields):
    return quick_profile(team, size_bytes=None, runtime_s=2, **fields)


def test_a_run_records_its_environment_and_a_changed_scheduler_shows_in_the_next(
    fio_installed, sshd, worker, lab: Lab
) -> None:
    device = lab.loop("env")
    team, host = team_with_host(sshd)
    disk = block_disk(host, device)
    profile = reads(team)
    first = wait_final(queueing.request_run(disk, profile))
    assert first.state == Run.State.SUCCEEDED, first.explanation

    env = first.environment
    assert env["complete"] is True
    assert env["kernel"] == platform.release()
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert env["fio"] == fio_version
    assert env["target"] == device
    found = env["device"]
    assert found["name"] == Path(device).name
    assert found["scheduler"] == environment.probe.selected_scheduler(sysfs(device, "scheduler"))
    assert found["nr_requests"] == int(sysfs(device, "nr_requests"))
    assert found["rq_affinity"] == int(sysfs(device, "rq_affinity"))
    assert found["read_ahead_kb"] == int(sysfs(device, "read_ahead_kb"))
    assert found["queue_cpus"] == queue_cpu_lists(device)
    assert found["queues"] == len(queue_cpu_lists(device))

    old_scheduler, old_ahead = found["scheduler"], found["read_ahead_kb"]
    scheduler = "mq-deadline" if old_scheduler == "none" else "none"
    with queue_setting(device, "scheduler", scheduler), queue_setting(device, "read_ahead_kb", str(old_ahead + 4)):
        second = wait_final(queueing.request_run(disk, profile))
        # The kernel gives each scheduler its own default depth: switching may change nr_requests too.
        nr_requests = int(sysfs(device, "nr_requests"))
    assert second.state == Run.State.SUCCEEDED, second.explanation
    expected = [f"scheduler {old_scheduler} → {scheduler}", f"read_ahead_kb {old_ahead} → {old_ahead + 4}"]
    if nr_requests != found["nr_requests"]:
        expected.insert(1, f"nr_requests {found['nr_requests']} → {nr_requests}")
    assert environment.environment_changes(first.environment, second.environment) == expected
