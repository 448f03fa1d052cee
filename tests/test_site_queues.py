"""Workers per site: a host's site routes its runs to the Celery queue site.<name>, and only a worker
listening there runs them (real workers, Redis, sshd and fio)."""

from __future__ import annotations

import pytest

from jobs.models import Disk, Host, Run
from jobs.runs import lifecycle, queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_each_sites_runs_are_executed_by_that_sites_worker(fio_installed, sshd, worker_factory, tmp_path):
    east_worker = worker_factory(queues="site.east")
    west_worker = worker_factory(queues="site.west")
    team, east = team_with_host(sshd, site="east")
    copied = ("address", "port", "username", "credential", "host_key_type", "host_key_b64", "host_key_fingerprint",
              "run_base_dir")  # fmt: skip
    west = Host.objects.create(team=team, name="west-vm", site="west", **{f: getattr(east, f) for f in copied})
    profile = quick_profile(team, runtime_s=2, size_bytes=4 * 2**20)
    runs = {}
    for name, host in (("east", east), ("west", west)):
        disk = Disk.objects.create(host=host, label=name, target_path=target_dir(tmp_path / name), disk_type="custom")
        runs[name] = queueing.request_run(disk, profile)
    for name, run in runs.items():
        run = wait_final(run)
        assert run.state == Run.State.SUCCEEDED, (name, run.explanation)
    east_log, west_log = east_worker.log.read_text(), west_worker.log.read_text()
    assert f"run {runs['east'].pk}: launching" in east_log
    assert f"run {runs['east'].pk}: launching" not in west_log
    assert f"run {runs['west'].pk}: launching" in west_log
    assert f"run {runs['west'].pk}: launching" not in east_log


def test_a_run_whose_site_has_no_worker_says_which_queue_it_waits_on(db, host, disk):
    host.site = "mars"
    host.save()
    run = queueing.create_run(disk, quick_profile(disk.team))
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=run.created_at,
                                         heartbeat_at=run.created_at)  # fmt: skip
    lifecycle.sweep(run.created_at + queueing.UNCLAIMED_AFTER + lifecycle.STALE_AFTER)
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED
    assert "queued on site.mars" in run.explanation and "-Q site.mars" in run.explanation
