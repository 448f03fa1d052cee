"""A run succeeds only when the tool's output reports the measured job done (issue 28): fio that aborts and
exits 0, a result with no I/O, or no result at all fails the run with fio's own words; a run the host's
watchdog stopped says it was benchweb's time limit, with the limit.

The end-to-end test has real fio refuse a mounted loop device ("appears mounted") and exit 0, as on the target in
the issue, and the real collection read it. The
fixture tests run every real output in the repository through the same rule: each of them still counts as done.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from jobs import remote, runners
from jobs.api.models import ApiToken
from jobs.imports import importing
from jobs.models import Alert, Disk, Membership, Run, RunResult
from jobs.runs import collecting, queueing
from jobs.tools import completion, detect
from jobs.tools.summary import ParseError
from tests.builders import quick_profile, team_with_host
from tests.loops import Lab, sh

FIXTURES = Path(__file__).parent.parent / "fixtures"
MOUNTED = (FIXTURES / "aborted" / "fio-3.33-mounted.json").read_text()
FIO_SAYS = "fio: /dev/loop0 appears mounted, and 'allow_mounted_write' isn't set. Aborting."
EVERY_OUTPUT = sorted(
    path
    for folder in (FIXTURES, FIXTURES / "real")
    if folder.is_dir()
    for path in folder.iterdir()
    if path.suffix in (".json", ".txt", ".terse")
)


def collected(
    text: str, exit_status: int | None = 0, stderr: str = "", *, elapsed_s: float | None = None, limit_s: int = 0
) -> runners.Outcome:
    """What a fio run whose result.json holds text ends as (FioRunner.interpret, as collecting._collect calls it)."""
    outputs = {"result.json": text.encode(), "stdout": b"", "stderr": stderr.encode()}
    params = {"tool": "fio", "runtime_s": 3}
    return runners.FioRunner().interpret(outputs, exit_status, params, elapsed_s=elapsed_s, limit_s=limit_s or None)


# --- fio's abort, from the real output ---------------------------------------------------------------------


def test_fio_that_refused_a_mounted_device_and_exited_0_fails_the_run_with_fios_message() -> None:
    outcome = collected(MOUNTED, 0, stderr=FIO_SAYS + "\n")

    assert outcome.state == "failed"
    assert outcome.explanation == f"fio aborted before any I/O: {FIO_SAYS}"  # once, though fio printed it twice
    assert outcome.summary is None  # no 0 IOPS to chart
    assert outcome.raw_output == MOUNTED  # kept, to be looked at


def test_a_result_with_no_io_and_no_words_fails_saying_the_job_never_ran() -> None:
    text = MOUNTED.replace(FIO_SAYS + "\n", "")

    outcome = collected(text)

    assert outcome.state == "failed"
    assert outcome.explanation == (
        "fio did no I/O: the measured job never ran (a runtime of 0), and fio printed no reason"
    )


def test_a_job_that_ran_its_runtime_and_completed_no_io_fails_saying_so() -> None:
    """A target that stalled for the whole runtime: fio reports the runtime and no I/O."""
    text = MOUNTED.replace(FIO_SAYS + "\n", "").replace('"runtime" : 0,', '"runtime" : 3000,')

    outcome = collected(text)

    assert outcome.state == "failed"
    assert outcome.explanation.startswith("fio ran the measured job for 3 s and it completed no I/O")


def test_fio_that_left_no_result_but_words_fails_with_its_words_even_with_exit_0() -> None:
    outcome = collected(FIO_SAYS + "\n", 0)

    assert outcome.state == "failed"
    assert outcome.explanation == f"fio left no result (fio exited with status 0); fio said: {FIO_SAYS}"


def test_an_imported_abort_is_refused_with_fios_words_as_json_and_as_text(db) -> None:
    for name in ("fio-3.33-mounted.json", "fio-3.33-mounted.txt"):
        text = (FIXTURES / "aborted" / name).read_text()
        with pytest.raises(ParseError) as refused:
            importing.parse_results(text)
        assert FIO_SAYS in str(refused.value) and "before any I/O" in str(refused.value), name
    assert not Run.objects.exists()


# --- every real output still counts as done ----------------------------------------------------------------


@pytest.mark.parametrize("path", EVERY_OUTPUT, ids=[f"{p.parent.name}/{p.name}" for p in EVERY_OUTPUT])
def test_every_real_output_without_a_job_error_is_a_measurement(path: Path) -> None:
    text = path.read_text()
    said = completion.tool_lines(text)
    for result in detect.parse_all(text):
        if not result.job_errors:
            assert completion.not_measured(result, tool=result.summary["tool"], said=said) is None, result.label


JSON_RUNS = [p for p in EVERY_OUTPUT if p.parent == FIXTURES and p.suffix == ".json" and "enospc" not in p.name]


@pytest.mark.parametrize("path", JSON_RUNS, ids=[p.name for p in JSON_RUNS])
def test_every_real_fio_json_output_collected_with_exit_0_succeeds(path: Path) -> None:
    """Read-only jobs (write side None), time_based ones, status streams, ramp, steady state, numjobs, mixed."""
    outcome = collected(path.read_text(), 0)

    assert outcome.state == "succeeded", outcome.explanation


def test_the_real_ndisk64_report_collected_succeeds() -> None:
    text = (FIXTURES / "ndisk_4proc_random_direct.txt").read_text()

    outcome = runners.NdiskRunner().interpret({"stdout": text.encode(), "stderr": b""}, 1, {"tool": "ndisk64"})

    assert outcome.state == "succeeded", outcome.explanation


def test_the_real_outputs_that_import_still_import(db, disk) -> None:
    run = importing.import_result(disk, (FIXTURES / "fio-3.33-randread-jsonplus.json").read_text(), name="r")

    assert run.state == Run.State.SUCCEEDED and run.summary
    assert run.summary["write"] is None and run.summary["read"]["iops"] > 0


# --- the host's time limit ---------------------------------------------------------------------------------


def _wrapper_run(tmp_path: Path, argv: list[str], limit_s: int) -> tuple[int, float]:
    """Run the real wrapper script (jobs/remote/wrapper.py) here with argv under a limit of limit_s; its exit status and
    elapsed seconds as the `ended` file has them."""
    base = tmp_path / "runs"
    run_dir = base / ("0" * 32)
    run_dir.mkdir(parents=True)
    (base / "done").mkdir()
    (base / "locks").mkdir()
    plan = remote.Plan(run_uuid="0" * 32, run_dir=str(run_dir), lock_path=str(base / "locks" / "t.lock"),
                       argv=argv, limit_s=limit_s, files={})  # fmt: skip
    (run_dir / "run.sh").write_text(remote.wrapper_script(plan))
    subprocess.run(["sh", str(run_dir / "run.sh")], check=True, timeout=120)
    status, _, started, finished = (run_dir / "ended").read_text().split()
    return int(status), float(finished) - float(started)


def test_a_run_the_watchdog_stopped_says_it_was_benchwebs_time_limit_with_the_limit(tmp_path: Path, fio_installed):
    """The real wrapper runs the real fio, 30 s time_based, under a 1 s limit: timeout stops it and exits 124."""
    job = tmp_path / "job.fio"
    job.write_text(f"[j]\nfilename={tmp_path / 'f'}\nsize=1M\nrw=read\ntime_based=1\nruntime=30\n")
    status, elapsed = _wrapper_run(tmp_path, ["fio", "--output-format=json", str(job)], limit_s=1)
    assert status == remote.WATCHDOG_STATUS == 124

    outcome = collected("", status, elapsed_s=elapsed, limit_s=1)

    assert outcome.state == "failed"
    assert outcome.explanation.startswith(
        "stopped by benchweb's time limit on the host: fio was still running 1 s after it started "
    )
    assert "with TERM (exit status 124)" in outcome.explanation and "exited with status" not in outcome.explanation


def test_a_kill_after_the_watchdogs_term_is_the_time_limit_too_but_another_kill_is_not() -> None:
    # When the command ignored TERM and -k had to KILL it, timeout(1) dies of the same signal, so the wrapper's
    # shell sees 137 (128 + SIGKILL), not 124. (The wrapper waits 30 s for it: -k 1 here.)
    killed = subprocess.run(["sh", "-c", "timeout -k 1 1 sh -c \"trap '' TERM; sleep 10\"; echo $?"],
                            capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    assert int(killed.stdout) == runners.KILLED_STATUS == 137
    params = {"tool": "fio", "runtime_s": 60, "size_bytes": None}
    limit = runners.watchdog_seconds(params, "block")  # 180: 60 s + the 120 s allowance

    by_watchdog = runners.FioRunner().interpret(
        {"result.json": b"", "stdout": b"", "stderr": b""}, 137, params, elapsed_s=limit + 30.2, limit_s=limit
    )
    by_someone = runners.FioRunner().interpret(
        {"result.json": b"", "stdout": b"", "stderr": b""}, 137, params, elapsed_s=42.0, limit_s=limit
    )

    assert by_watchdog.explanation.startswith(
        "stopped by benchweb's time limit on the host: fio was still running 180 s after it started "
        "(the profile's runtime 60 s + a 120 s allowance)"
    )
    assert "with KILL 30 s later as it had not stopped (exit status 137)" in by_watchdog.explanation
    assert by_someone.explanation.startswith(
        "fio was killed with SIGKILL (exit status 137) after 42 s, not by benchweb's time limit (180 s, then KILL "
        "30 s later)"
    )


# --- end to end: a real mount, the real sshd, worker and fio ---------------------------------------------------


def _alert(team, timeout: float = 30) -> Alert:
    """The run_failed alert, opened by the worker right after it committed the run's end."""
    deadline = time.monotonic() + timeout
    while not (found := Alert.objects.filter(team=team, kind=Alert.Kind.RUN_FAILED).first()):
        assert time.monotonic() < deadline, "no run_failed alert was opened"
        time.sleep(0.2)
    return found


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_fio_that_aborts_on_a_mounted_device_and_exits_0_fails_the_run_with_its_words_and_the_alert_opens(
    fio_installed, sshd, worker, lab: Lab, tmp_path: Path
) -> None:
    """fio refuses a mounted device, prints why and exits 0. benchweb's own launch can no longer get there (the
    wrapper's first-byte check refuses a mounted device before fio starts: tests/safety/test_first_byte.py), so this
    test starts the run's wrapper on the host itself, as the launch would but without that check, with the job
    benchweb builds for the run; real fio aborts, and the real collection over the test sshd reads it. The run
    fails with fio's words on its page and in the API, no result is charted, and the run_failed alert opens."""
    device = lab.loop("a")
    sh("mkfs.ext4", "-q", "-F", device)
    lab.mount(device)
    base = tmp_path / "runs"
    team, host = team_with_host(sshd, run_base_dir=str(base))
    disk = Disk.objects.create(host=host, label="loop", target_path=device, kind=Disk.Kind.BLOCK,
                               disk_type="custom", allow_destructive=True)  # fmt: skip
    run = queueing.create_run(disk, quick_profile(team, rw="randwrite", size_bytes=None))
    run_dir = base / str(run.uuid)
    (base / "done").mkdir(parents=True)
    run_dir.mkdir()
    argv, files, _ = runners.for_parameters(run.parameters).build(run.parameters, device, "block", str(run_dir),
                                                                   str(run.uuid))  # fmt: skip
    plan = remote.Plan(run_uuid=str(run.uuid), run_dir=str(run_dir), lock_path=str(base / "x.lock"), argv=argv,
                       limit_s=60, files=files)  # fmt: skip
    for name, data in (files | {"run.sh": remote.wrapper_script(plan).encode()}).items():
        (run_dir / name).write_bytes(data)
    subprocess.run(["sh", "run.sh"], cwd=run_dir, check=True, timeout=60)
    Run.objects.filter(pk=run.pk).update(state=Run.State.COLLECTING, remote_dir=str(run_dir),
                                         started_at=timezone.now())  # fmt: skip

    collecting.collect(run.pk)

    run.refresh_from_db()
    said = f"fio: {device} appears mounted, and 'allow_mounted_write' isn't set. Aborting."
    assert run.state == Run.State.FAILED, run.explanation
    assert run.explanation == f"fio aborted before any I/O: {said}"
    assert run.exit_status == 0
    assert not RunResult.objects.filter(run=run).exists()  # nothing on the chart or in /metrics
    alert = _alert(team)
    assert alert.state == Alert.State.OPEN and said in alert.summary
    user = User.objects.create_user("runner", password="x-long-password-1")
    Membership.objects.create(user=user, team=team, role="member")
    page = Client()
    page.force_login(user)
    assert said.replace("'", "&#x27;") in page.get(f"/runs/{run.pk}/").content.decode()
    _, secret = ApiToken.issue(user, team, "tests")
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/v1/runs/{run.pk}/").json()
    assert answer["state"] == "failed" and answer["explanation"] == run.explanation
