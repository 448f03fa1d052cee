"""The environment provenance and the ESSD PL3 recipe end to end: a real sshd, a real worker, real fio, loop
devices (the `lab` fixture; root). The cloud metadata service cannot exist here: only the probe sent is checked."""

from __future__ import annotations

import contextlib
import json
import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from jobs import environment, remote
from jobs.environment import pinning
from jobs.models import Disk, Host, Run
from jobs.runs import launching, queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.loops import Lab

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
    assert found["chain"]["text"] == Path(device).name and environment.chain_devices(env) == [Path(device).name]

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
    shows_the_changes(team, first, second, expected)


def shows_the_changes(team, first: Run, second: Run, expected: list[str]) -> None:
    """The run page lists the environment, Compare and the disk page the changes, the API the environment."""
    from django.contrib.auth.models import User
    from django.test import Client

    from jobs.api.models import ApiToken
    from jobs.models import Membership

    user = User.objects.create_user("looker")
    Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
    client = Client()
    client.force_login(user)
    run_page = client.get(f"/runs/{second.pk}/").content.decode()
    assert 'id="run-environment"' in run_page and f"<dd>{second.environment['kernel']}</dd>" in run_page
    compare_page = client.get(f"/compare/?runs={first.pk},{second.pk}").content.decode()
    changes = compare_page.split('id="environment-changes"')[1].split("</section>")[0]
    for line in expected:
        assert f'<span class="env-change">{line}</span>' in changes
    disk_page = client.get(f"/disks/{first.disk_id}/").content.decode()
    chain = second.environment["device"]["chain"]["text"]
    assert disk_page.count("Device chain") == 1 and f'id="device-chain">{chain} <span' in disk_page
    marks = disk_page.split('id="environment-changes"')[1].split("</section>")[0]
    assert f'href="/runs/{first.pk}/">run {first.pk}</a> → <a href="/runs/{second.pk}/">run {second.pk}</a>' in marks
    for line in expected:
        assert f'<span class="env-change">{line}</span>' in marks
    chart = json.loads(marks.split('id="environment-marks" type="application/json">')[1].split("</script>")[0])
    assert chart == [{"before": first.pk, "after": second.pk, "lines": expected,
                      "x": int(second.finished_at.timestamp() * 1000)}]  # fmt: skip
    _, secret = ApiToken.issue(user, team, "tests")
    detail = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/v1/runs/{second.pk}/").json()
    assert detail["environment"] == second.environment


@contextlib.contextmanager
def restored(device: str, name: str) -> Iterator[None]:
    """Put a queue setting of a loop device back as it was, whatever the block did to it."""
    with queue_setting(device, name, sysfs(device, name)):
        yield


def test_a_pinned_two_job_run_carries_the_queue_cpus_read_from_sysfs(fio_installed, sshd, worker, lab: Lab) -> None:
    device = lab.loop("pinned")
    cpus = set().union(*(pinning.cpu_set(text) or set() for text in queue_cpu_lists(device)))
    if len(cpus) < 2:
        pytest.skip(f"the loop device's queues are served by {len(cpus)} CPU; a two-job pinned run needs 2")
    team, host = team_with_host(sshd)
    with restored(device, "rq_affinity"):
        run = wait_final(queueing.request_run(block_disk(host, device), reads(team, jobs=2, pin_queue_cpus=True)))
        assert sysfs(device, "rq_affinity") == str(run.environment["device"]["rq_affinity"])  # not tunable: untouched
    assert run.state == Run.State.SUCCEEDED, run.explanation
    allowed = [line.removeprefix("cpus_allowed=") for line in run.command.splitlines() if "cpus_allowed=" in line]
    assert len(allowed) == 1 and pinning.cpu_set(allowed[0]) == cpus
    assert "cpus_allowed_policy=split" in run.command and "numjobs=2" in run.command
    assert run.environment["device"]["queue_cpus"] == queue_cpu_lists(device)


def test_a_pinned_profile_with_more_jobs_than_queue_cpus_is_refused_before_anything_starts(
    fio_installed, sshd, worker, lab: Lab
) -> None:
    device = lab.loop("too-many")
    cpus = set().union(*(pinning.cpu_set(text) or set() for text in queue_cpu_lists(device)))
    team, host = team_with_host(sshd)
    run = wait_final(
        queueing.request_run(block_disk(host, device), reads(team, jobs=len(cpus) + 1, pin_queue_cpus=True))
    )
    assert run.state == Run.State.ERROR
    assert run.explanation.startswith(f"refused, nothing was started: the profile runs {len(cpus) + 1} fio jobs")
    assert (
        "pin_queue_cpus" in run.explanation and f"Lower the profile's jobs to {len(cpus)} or fewer" in run.explanation
    )
    assert run.command == "" and run.environment["device"]["name"] == Path(device).name


def test_a_pinned_profile_on_a_directory_without_a_block_device_under_it_says_why(
    fio_installed, sshd, worker, lab: Lab
) -> None:
    mountpoint = lab.mount("tmpfs", "-t", "tmpfs", "-o", "size=64m")
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmpfs", target_path=str(mountpoint), disk_type="custom")
    run = wait_final(queueing.request_run(disk, quick_profile(team, pin_queue_cpus=True)))
    assert run.state == Run.State.ERROR
    assert "the queues of" in run.explanation and "the filesystem's source is not a block device" in run.explanation
    assert "pin_queue_cpus" in run.explanation
    assert run.environment["filesystem"]["type"] == "tmpfs"


def test_rq_affinity_is_set_to_2_on_a_tunable_host_and_the_command_is_shown_on_another(
    fio_installed, sshd, worker, lab: Lab
) -> None:
    device = lab.loop("affinity")
    name = Path(device).name
    team, host = team_with_host(sshd)
    disk = block_disk(host, device)
    profile = reads(team, pin_queue_cpus=True)
    with queue_setting(device, "rq_affinity", "1"):
        shown = wait_final(queueing.request_run(disk, profile))
        assert shown.state == Run.State.SUCCEEDED, shown.explanation
        assert sysfs(device, "rq_affinity") == "1"
        command = f"echo 2 | sudo tee /sys/block/{name}/queue/rq_affinity"
        assert any("host is not marked tunable" in w and w.endswith(command) for w in shown.warnings), shown.warnings

        host.tunable = True
        host.save()
        tuned = wait_final(queueing.request_run(disk, profile))
        assert tuned.state == Run.State.SUCCEEDED, tuned.explanation
        assert sysfs(device, "rq_affinity") == "2"
    assert tuned.environment["device"]["rq_affinity"] == 1 and tuned.environment["device"]["rq_affinity_set"] == 2
    assert any("benchweb set it to 2" in w for w in tuned.warnings), tuned.warnings
    assert environment.environment_changes(shown.environment, tuned.environment) == ["rq_affinity 1 → 2"]


def test_the_probe_sent_asks_the_cloud_metadata_service_only_for_a_host_that_allows_it(
    sshd, tmp_path: Path, monkeypatch
) -> None:
    """No metadata service can exist here: the launch's own preflight is stopped once it has the script it would
    send, and only that script is looked at (so nothing here asks 169.254.169.254 either)."""
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    sent: list[str] = []

    def preflight(conn, base, run_uuid, tool_check, safety_script, environment_script=""):
        sent.append(environment_script)
        raise remote.RemoteError("stopped by the test: only the script is looked at")

    monkeypatch.setattr(remote, "preflight", preflight)
    for cloud_metadata in (False, True):
        Host.objects.filter(pk=host.pk).update(cloud_metadata=cloud_metadata)
        run = queueing.create_run(disk, quick_profile(team, name=f"quick {cloud_metadata}"))
        Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=timezone.now())
        assert launching.launch(run.pk) == Run.State.ERROR
    off, on = sent
    assert "benchweb_environment" in off and "benchweb_environment" in on
    for address in ("169.254.169.254", "100.100.100.200"):
        assert address not in off and address in on
