"""The parts of a group run by fio's client/server mode: a real fio client's output cut into each member's own (its
figures as fio printed them), the per-second IOPS log read, the server's command line and socket, the request's
refusals (jobs/sets/requesting.py, the API), and the driver's refusals before anything is sent (the worker's fio
missing or of another release) — without a worker."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from jobs import runners
from jobs.models import Run, RunSet
from jobs.remote import fio_server
from jobs.runs import collecting, driving
from jobs.sets import requesting
from jobs.sets.requesting import RunRefused
from jobs.tools import fio_server_output
from tests.factories import DiskFactory, HostFactory, ProfileFactory
from tests.sets.group_requests import assert_refused_whole
from tests.world import client_for, make_world, post

JOB = """; benchweb run {name}
[benchweb-{name}]
ioengine=psync
rw=randread
bs=4096
iodepth=1
numjobs=1
runtime=2
time_based=1
size=4194304
directory={directory}
unlink=1
"""


@pytest.mark.slow
def test_a_real_client_output_is_cut_into_each_members_own_with_fios_printed_figures(fio_installed, tmp_path: Path):
    """Two real fio servers on Unix sockets, driven by a real fio client as the driver runs it (its job files with
    the per-second log): each member's part is a fio output of its own that the fio runner judges succeeded, its
    IOPS the text fio printed in that member's entry, and its log gives its start and samples."""
    names = ["m1.sock", "m2.sock"]
    servers = []
    for name in names:
        (tmp_path / f"data-{name}").mkdir()
        servers.append(subprocess.Popen(["fio", f"--server=sock:{tmp_path / name}"], cwd=tmp_path,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
    try:
        _wait_for(lambda: all((tmp_path / name).exists() for name in names))
        argv = ["fio", "--output-format=json+", f"--output={driving.OUTPUT}"]
        for number, name in enumerate(names, 1):
            job = JOB.format(name=f"member-{number}", directory=tmp_path / f"data-{name}")
            (tmp_path / f"{name}.fio").write_text(fio_server.client_job(job, checked=False))
            argv += [f"--client=sock:{name}", f"{name}.fio"]
        before = time.time()
        subprocess.run(argv, cwd=tmp_path, check=True, timeout=60, capture_output=True)
        after = time.time()
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)

    output = (tmp_path / driving.OUTPUT).read_text()
    parts = fio_server_output.member_output(output, ["benchweb-member-1", "benchweb-member-2"])
    assert sorted(parts) == ["benchweb-member-1", "benchweb-member-2"]
    printed = re.findall(r'"jobname" : "(benchweb-member-[12])".*?"read" : \{.*?"iops" : ([0-9.]+),', output, re.S)
    assert len(printed) == 2
    for job, iops_text in printed:
        part = parts[job]
        assert f'"iops": {iops_text},' in part  # fio's digits, not a float's repr
        assert '"client_stats"' not in part and '"hostname"' not in part and "All clients" not in part
        outcome = runners.for_parameters({"tool": "fio"}).interpret(
            {"result.json": part.encode(), "stdout": b"", "stderr": b""}, None, {"time_based": True}
        )
        assert outcome.state == "succeeded", outcome.explanation
        assert outcome.summary["total"]["iops"] == pytest.approx(float(iops_text))
        assert outcome.summary["printed"]["read"]["iops"] == iops_text
    for name in names:
        log = (tmp_path / f"{fio_server.LOG_NAME}_iops.1.log.{name}").read_text()
        started, samples = fio_server_output.iops_samples(log)
        assert before - 1 <= started <= after
        assert [s["t_s"] for s in samples][:1] == [1.0] and all(s["read_iops"] > 0 for s in samples)


def _wait_for(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "fio's server did not start"
        time.sleep(0.05)


def test_the_iops_log_gives_the_start_and_each_second_of_each_direction():
    log = "\n".join([
        "1795942183850, 7773, 0, 4096, 0",
        "1795942183850, 1200, 1, 4096, 0",
        "1795942183850, 5, 2, 4096, 0",  # trim: not a sample
        "fio: something printed",
        "1795942184850, 7170, 0, 4096, 0",
    ])  # fmt: skip
    started, samples = fio_server_output.iops_samples(log)
    assert started == pytest.approx(1795942182.850)
    assert samples == [{"t_s": 1.0, "read_iops": 7773, "write_iops": 1200},
                       {"t_s": 2.0, "read_iops": 7170, "write_iops": None}]  # fmt: skip
    assert fio_server_output.iops_samples("") == (None, [])


def test_what_the_client_printed_is_given_to_each_member_by_its_socket():
    text = "<m1.sock> fio: pid=0, err=2/file:filesetup.c\n<m2.sock> Starting 1 process\n<m1.sock> \nother\n"
    assert fio_server_output.client_messages(text, {"m1.sock": "", "m2.sock": "", "m3.sock": ""}) == {
        "m1.sock": "fio: pid=0, err=2/file:filesetup.c", "m2.sock": "Starting 1 process", "m3.sock": ""
    }  # fmt: skip


def test_the_server_replaces_the_job_read_only_where_the_job_was_and_needs_a_short_socket_path():
    run_dir = "/home/bench/.benchweb/runs/2a559e9f-277d-4893-afcc-faad39981ed9"
    assert fio_server.server_argv(["fio", "--output-format=json", "--readonly", f"{run_dir}/job.fio"], run_dir) == [
        "fio", "--readonly", f"--server=sock:{run_dir}/server/fio.sock"
    ]  # fmt: skip
    assert fio_server.server_argv(["/opt/fio", f"{run_dir}/job.fio"], run_dir) == [
        "/opt/fio", f"--server=sock:{run_dir}/server/fio.sock"
    ]  # fmt: skip
    assert fio_server.socket_problem(run_dir, "db-1") == ""
    deep = "/srv/" + "very-long-directory-name/" * 3 + "2a559e9f-277d-4893-afcc-faad39981ed9"
    problem = fio_server.socket_problem(deep, "db-1")
    assert "longer than a Unix socket's path may be (103)" in problem and "db-1's page" in problem


def test_the_client_job_logs_iops_a_second_in_its_measured_job():
    job = "[fill]\nrw=write\n\n[benchweb-abc]\nrw=randread\n"
    assert fio_server.job_name(job) == "benchweb-abc"
    sent = fio_server.client_job(job, checked=False)
    assert sent.endswith(
        "rw=randread\nunique_filename=0\nwrite_iops_log=benchweb\nlog_avg_msec=1000\nlog_unix_epoch=1\n"
    )
    assert "exec_prerun" not in sent
    # A write run's every job runs the last check first: a [global] ahead of the profile's own sections.
    checked = fio_server.client_job(job, checked=True)
    assert checked.startswith("[global]\nexec_prerun=sh guard.last.sh\n[fill]\n") and checked.endswith(sent)


def test_the_driver_names_each_host_whose_fio_is_another_release():
    member = lambda host, version: SimpleNamespace(  # noqa: E731
        summary={"tool_version": version} if version else {}, disk=SimpleNamespace(host=SimpleNamespace(name=host))
    )
    assert driving.version_problem("3.33", [member("a", "3.33"), member("b", "3.33")]) == ""
    problem = driving.version_problem("3.33", [member("a", "3.33"), member("b", "3.41"), member("c", None)])
    assert "the worker has fio 3.33 but b has fio 3.41; c has fio of no known release" in problem
    assert "nothing was sent to any member" in problem


@pytest.fixture
def ours(db):
    world, secret = make_world("ours")
    return world, client_for(secret)


def _disks(world):
    return [
        world.disk,
        *(DiskFactory(host=HostFactory(team=world.team, name=f"db-{n}"), label=f"d{n}") for n in (2, 3)),
    ]


def test_a_group_asked_of_fio_keeps_it_in_its_plan_and_says_so(ours, django_capture_on_commit_callbacks):
    world, api = ours
    disks = _disks(world)
    with django_capture_on_commit_callbacks():
        response = post(api, "/api/v1/sets/", {"profile": world.profile.pk, "disks": [d.pk for d in disks],
                                               "synchronised_by": "fio"})  # fmt: skip
    assert response.status_code == 201, response.content
    found = response.json()
    assert found["plan"]["synchronised_by"] == "fio"
    assert found["plan"]["text"] == "3 members, one a disk, started together by fio's client/server mode"
    assert RunSet.objects.get(pk=found["id"]).run_by_fio


def test_fio_mode_is_refused_where_it_cannot_be_and_nothing_is_written(ours):
    world, api = ours
    made = _disks(world)
    disks = [d.pk for d in made]
    ndisk = ProfileFactory(team=world.team, name="aix", tool="ndisk64")
    body = {"profile": world.profile.pk, "disks": disks}
    assert_refused_whole(api, body | {"synchronised_by": "nobody"}, "synchronised_by", "is not a valid choice")
    assert_refused_whole(api, body | {"profile": ndisk.pk, "synchronised_by": "fio"}, "synchronised_by",
                         "only fio has a client/server mode")  # fmt: skip
    assert_refused_whole(api, body | {"kind": "group_sizes", "synchronised_by": "fio"}, "synchronised_by",
                         "Only a group takes synchronised_by")  # fmt: skip
    assert_refused_whole(api, {"profile": world.profile.pk, "disk": world.disk.pk, "synchronised_by": "fio"},
                         "synchronised_by", "Only a group takes synchronised_by")  # fmt: skip
    with pytest.raises(RunRefused) as refused:
        requesting.create_group(made, world.profile, synchronised_by="fio-ish")
    assert refused.value.field == "synchronised_by"


@pytest.mark.parametrize("worker_fio", ["none", "other release"])
def test_the_driver_ends_the_group_before_sending_anything_when_the_workers_fio_cannot_drive_it(
    ours, worker_fio, monkeypatch, django_capture_on_commit_callbacks
):
    world, _ = ours
    with django_capture_on_commit_callbacks(execute=False):
        run_set = requesting.create_group(_disks(world), world.profile, synchronised_by="fio")
        run_set.members.update(state=Run.State.RUNNING, remote_dir="/runs/x", summary={"tool_version": "3.33"})
        if worker_fio == "none":
            monkeypatch.setattr(driving.shutil, "which", lambda name: None)
        else:
            monkeypatch.setattr(driving, "local_fio", lambda: ("/usr/bin/fio", "3.41"))
        monkeypatch.setattr(driving, "_stop_servers", lambda members: None)  # no host to reach here
        assert driving.drive(run_set.pk) == "driven"
        assert driving.drive(run_set.pk).startswith("not mine")  # taken once

    explanations = {m.explanation for m in run_set.members.all()}
    assert set(run_set.members.values_list("state", flat=True)) == {Run.State.ERROR}
    if worker_fio == "none":
        assert explanations == {
            "fio's client on the worker could not run the group: fio is not installed on the worker: fio's "
            "client/server mode runs fio's client there (install the members' fio release on every worker, or run "
            "the group with benchweb's synchronisation)"
        }
    else:
        (only,) = explanations
        assert only.startswith("fio's client and servers must be one release") and "vm has fio 3.33" in only


def test_a_member_whose_server_ended_without_the_client_is_collected_as_failed_saying_why():
    """The collection of a member of a group run by fio (its server ended by its watchdog: the worker driving the
    client was lost) fails it, whatever the server left, and says why."""
    outcome = runners.Outcome("succeeded", "", {"total": {"iops": 1.0}}, "fio: server listening", "")
    lost = collecting._driver_lost(outcome)
    assert lost.state == "failed" and lost.summary is None and lost.raw_output == "fio: server listening"
    assert lost.explanation.startswith("fio's server on this host ended before the group's fio client on the worker")
