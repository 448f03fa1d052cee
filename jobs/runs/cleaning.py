"""Cleaning up after a run on its host: the last thing a launch refused on the host, a collection and a stop do.

Its own module because three steps end with it (jobs/runs/launching.py, collecting.py, stopping.py), and a step
imports no other step."""

from __future__ import annotations

import logging

from jobs import remote, safety, ssh
from jobs.models import Disk, Run

log = logging.getLogger(__name__)


def clean_up(conn: ssh.Connection, run: Run) -> None:
    """Remove the run's directory on the host (and a directory target's test files of this run); a failure is
    logged, never raised: the run has ended either way, and its files only wait to be removed by hand."""
    glob = f"{run.disk.target_path.rstrip('/')}/{safety.test_file_name(str(run.uuid))}*"
    try:
        remote.cleanup(
            conn,
            run.remote_dir,
            glob if run.disk.kind == Disk.Kind.DIRECTORY else None,
            base=run.disk.host.run_base_dir,
            run_uuid=str(run.uuid),
        )
    except (ssh.SSHError, remote.RemoteError) as exc:
        log.warning("run %s: could not remove its files on the host: %s", run.pk, exc)
