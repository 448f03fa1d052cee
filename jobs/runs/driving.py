"""Driving a group run by fio's own client/server mode
(docs/user-guide/groups.md#running-with-fios-own-clientserver-mode): each member is launched as any run is (the
preflight, the safety verdict, the upload, the wrapper's last check and its claim of the device), but its wrapper
starts fio's server on a Unix socket instead of the job; when the last member's server is up, its launch sends
`jobs.drive_group` here, and one worker runs fio's client for them all.

1. The drive is taken once (RunSet.driven_at, a conditional UPDATE): a second message finds it taken.
2. A member that ended before the drive (refused, no fio, unreachable) calls the others off: fio's mode starts all
   the members or none, and nothing was written on any host (a server writes only when the client's job arrives).
3. The worker's fio must be the members' release (fio's client and server speak one protocol version): else the
   group ends naming each host whose fio differs, before any job is sent.
4. Each member's socket is forwarded to a local socket in a private directory (jobs/ssh/sockets.py) over the
   worker's session to its host; fio's client sends every member its own job file (with a per-second IOPS log,
   and for a write run the last check again as its exec_prerun, right before its first byte: jobs/safety/guard.py),
   and this step waits for it, marking the members alive each second and stopping the client when a member is
   cancelled or ends.
5. A member refused by that check ends as a refused run does, nothing written. Each other member's part of the
   client's output is judged as its own output would be (tool.interpret), its samples
   and its start read from its IOPS log (its host's clock: the group page applies the host's measured offset), and
   stored as a collection stores (jobs/runs/storing.py); then each server is stopped and its run directory removed.

The worker holds the members' sessions for the whole run: a worker lost mid-run loses the client, each server is
then stopped by its own watchdog and its run collected as failed, saying why (jobs/runs/collecting.py).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from django.utils import timezone

from jobs import remote, ssh
from jobs import runners as runner
from jobs.hosts import connecting
from jobs.models import Run, RunSet
from jobs.remote import fio_server
from jobs.runs import cleaning, states, storing
from jobs.runs.states import finish
from jobs.safety import guard
from jobs.tools import fio_server_output

log = logging.getLogger(__name__)

# How long the servers have to come up once every member is running (each wrapper's last check comes first).
SOCKET_WAIT_S = 30.0
# How long fio's client may run past the longest member's watchdog before it is stopped.
CLIENT_MARGIN_S = 60.0
# A client told to stop (SIGINT: fio's client then tells its servers) is killed after this long.
CLIENT_STOP_S = 15.0
OUTPUT = "out.json"


@dataclass
class Member:
    run: Run
    name: str  # the local socket's name, "m1.sock": how fio's client names the member in its messages
    job: str = ""  # the job section's name in the member's job file: how its output names its entries
    forward: ssh.SocketForward | None = None  # its server's socket, reached from the worker


def drive(run_set_id: int) -> str:
    run_set = RunSet.objects.get(pk=run_set_id)
    if not run_set.run_by_fio or run_set.driven_at is not None:
        return "not mine: no group run by fio, or its drive is taken"
    runs = list(run_set.members.select_related("disk__host__credential").order_by("set_index"))
    ended = [r for r in runs if r.is_final]
    if not ended and any(r.state != Run.State.RUNNING or not r.remote_dir for r in runs):
        return "waiting for the other members' servers"
    if not RunSet.objects.filter(pk=run_set.pk, driven_at__isnull=True).update(driven_at=timezone.now()):
        return "taken by another worker"
    if ended:
        _call_off(runs, _first_failure(ended))
        return "called off"
    members = [Member(run, f"m{number}.sock") for number, run in enumerate(runs, 1)]
    try:
        _drive(members)
    except (ssh.SSHError, remote.RemoteError, OSError, ValueError) as exc:
        log.warning("group %s: fio's client could not run: %s", run_set.pk, exc)
        _end_all(members, f"fio's client on the worker could not run the group: {exc}")
    finally:
        _stop_servers(members)
    return "driven"


def _first_failure(ended: list[Run]) -> str:
    run = ended[0]
    return f"member {(run.set_index or 0) + 1} on {run.disk} ended {run.state}: {run.explanation}"


def _call_off(runs: list[Run], why: str) -> None:
    text = (f"called off before fio's client started, nothing was written: {why} (a group run by fio starts all its "
            "members or none)")  # fmt: skip
    for run in runs:
        if not run.is_final:
            states.call_off(run, text)
    RunSet.objects.filter(pk=runs[0].run_set_id or 0).update(explanation=text)


def _end_all(members: list[Member], why: str) -> None:
    for member in members:
        finish(member.run, Run.State.ERROR, why)


def local_fio() -> tuple[str, str]:
    """The worker's fio and its release ("3.33"); RemoteError saying how to install it when there is none."""
    path = shutil.which("fio")
    if path is None:
        raise remote.RemoteError(
            "fio is not installed on the worker: fio's client/server mode runs fio's client there (install the "
            "members' fio release on every worker, or run the group with benchweb's synchronisation)"
        )
    answer = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return path, answer.stdout.strip().removeprefix("fio-")


def version_problem(local: str, members: list[Run]) -> str:
    """Why the worker's fio cannot drive these members ("" when every member runs the same release)."""
    different = [f"{run.disk.host.name} has fio {(run.summary or {}).get('tool_version') or 'of no known release'}"
                 for run in members if (run.summary or {}).get("tool_version") != local]  # fmt: skip
    if not different:
        return ""
    return (f"fio's client and servers must be one release (they speak one protocol), and the worker has fio {local} "
            f"but {'; '.join(dict.fromkeys(different))}: install one fio release on the worker and the hosts, or run "
            "the group with benchweb's synchronisation; nothing was sent to any member")  # fmt: skip


def _drive(members: list[Member]) -> None:
    fio, version = local_fio()
    if problem := version_problem(version, [m.run for m in members]):
        _end_all(members, problem)
        return
    with tempfile.TemporaryDirectory(prefix="bw-fio-") as folder, contextlib.ExitStack() as stack:
        here = Path(folder)  # mode 0700: only the worker's user reaches the local sockets
        conns = {m.run.disk.host_id: stack.enter_context(connecting.session(m.run.disk.host)) for m in members}
        _wait_for_sockets(members, conns)
        argv = [fio, "--output-format=json+", f"--output={OUTPUT}"]
        for member in members:
            conn = conns[member.run.disk.host_id]
            jobfile = remote.read_file(conn, f"{member.run.remote_dir}/job.fio").decode()
            member.job = fio_server.job_name(jobfile)
            checked = runner.writes(member.run.parameters)
            (here / f"{member.name}.fio").write_text(fio_server.client_job(jobfile, checked=checked))
            remote_socket = fio_server.socket_path(member.run.remote_dir)
            member.forward = stack.enter_context(conn.forward_socket(remote_socket, str(here / member.name)))
            argv += [f"--client=sock:{member.name}", f"{member.name}.fio"]
        status = _run_client(argv, here, members)
        _store(members, here, status, conns)


def _wait_for_sockets(members: list[Member], conns: dict[int, ssh.Connection]) -> None:
    deadline = time.monotonic() + SOCKET_WAIT_S
    waiting = list(members)
    while waiting:
        waiting = [m for m in waiting if not conns[m.run.disk.host_id].exists(fio_server.socket_path(m.run.remote_dir))]
        if not waiting:
            return
        if time.monotonic() > deadline:
            names = ", ".join(f"member {(m.run.set_index or 0) + 1} on {m.run.disk.host.name}" for m in waiting)
            raise remote.RemoteError(f"fio's server did not start within {SOCKET_WAIT_S:g} s on {names} (its "
                                     "wrapper's log is in its run directory)")  # fmt: skip
        time.sleep(0.2)


def _run_client(argv: list[str], here: Path, members: list[Member]) -> int:
    """Run fio's client to its end, marking the members alive each second; stopped (SIGINT, then KILL) when a
    member ends or is cancelled meanwhile, or past the longest watchdog. Its exit status."""
    limit = max(runner.watchdog_seconds(m.run.parameters, m.run.disk.kind) for m in members) + CLIENT_MARGIN_S
    deadline = time.monotonic() + limit
    ids = [m.run.pk for m in members]
    with (here / "client.err").open("wb") as errors, _process(argv, here, errors) as client:
        while True:
            try:
                return client.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            alive = Run.objects.filter(pk__in=ids, state=Run.State.RUNNING, cancel_requested=False)
            if alive.update(heartbeat_at=timezone.now()) < len(ids) or time.monotonic() > deadline:
                client.send_signal(signal.SIGINT)
                try:
                    return client.wait(timeout=CLIENT_STOP_S)
                except subprocess.TimeoutExpired:
                    client.kill()
                    return client.wait()


@contextlib.contextmanager
def _process(argv: list[str], here: Path, errors: IO[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    client = subprocess.Popen(argv, cwd=here, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors)
    try:
        yield client
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def _store(members: list[Member], here: Path, status: int, conns: dict[int, ssh.Connection]) -> None:
    output = _read(here / OUTPUT)
    said = fio_server_output.client_messages(
        output + "\n" + _read(here / "client.err"), {m.name: m.name for m in members}
    )
    parts = fio_server_output.member_output(output, [m.job for m in members])
    for member in members:
        run = member.run
        run.refresh_from_db()
        if run.is_final or run.cancel_requested:
            continue  # cancelled meanwhile: its stop ends it
        if runner.writes(run.parameters) and (refused := storing.refused_on_host(conns[run.disk.host_id], run)):
            finish(run, Run.State.ERROR, refused, exit_status=guard.REFUSED_STATUS)
            continue  # its last check at the first byte (fio's exec_prerun) started none of its jobs
        part = parts.get(member.job)
        tool = runner.for_parameters(run.parameters)
        outputs = {"result.json": (part or "").encode(), "stdout": b"", "stderr": said.get(member.name, "").encode()}
        limit = runner.watchdog_seconds(run.parameters, run.disk.kind)
        outcome = tool.interpret(outputs, None if part else status, run.parameters, limit_s=limit)
        if part is None:
            lost = "; ".join(dict.fromkeys(member.forward.errors)) if member.forward else ""
            why = f"fio's client reported nothing for this member: {outcome.explanation}"
            outcome = replace(outcome, explanation=why + (f" (its server's socket: {lost})" if lost else ""))
        started, samples = fio_server_output.iops_samples(
            _read(here / f"{fio_server.LOG_NAME}_iops.1.log.{member.name}")
        )
        fields = {}
        if outcome.summary is not None:
            outcome = replace(outcome, summary=outcome.summary | {"samples": samples})
        if started is not None:
            begun = datetime.fromtimestamp(started, tz=UTC)
            ended = begun + timedelta(seconds=max((s["t_s"] or 0.0 for s in samples), default=0.0))
            fields = {"started_at": begun,
                      "progress": run.progress | Run.clock(begun, 0, ended) | {"elapsed_from": "host"}}  # fmt: skip
        storing.store_outcome(run, outcome, exit_status=status, **fields)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _stop_servers(members: list[Member]) -> None:
    """Each member's server stopped and its run directory removed (its run ended above, so its observation step
    leaves it alone); a host that does not answer keeps its server until the server's watchdog."""
    for member in members:
        run = Run.objects.select_related("disk__host__credential").get(pk=member.run.pk)
        if not run.remote_dir:
            continue
        try:
            with connecting.session(run.disk.host) as conn:
                remote.cancel(conn, run.remote_dir)
                if run.is_final:
                    cleaning.clean_up(conn, run)
        except (ssh.SSHError, remote.RemoteError) as exc:
            log.warning("run %s: could not stop fio's server on the host: %s", run.pk, exc)
