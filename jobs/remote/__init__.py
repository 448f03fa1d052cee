"""The detached-run protocol on a target host: launch, poll, collect, cancel, clean up.

A run lives in its own directory on the target, keyed by the run's UUID:

    run.sh        the wrapper benchweb uploads; started under setsid, so it leads its own session
    job.fio       the job file (fio runs only)
    launched/     made with mkdir, which is atomic: the second launch of a UUID finds it and does nothing
    pid           the wrapper's pid (= the session id of everything the run started)
    stdout, stderr, result.json    what the tool wrote
    finished      when the tool ended (epoch seconds, host clock)
    ended         "<exit status> <pid> <started> <finished>", written via rename just before `status`: what a
                  collection reads, in one file
    status        the tool's exit status, written via rename, so its presence means "finished"
    guard.*       a write run's last check before the first byte (jobs/safety/guard.py)
    <base>/done/<uuid>   an empty marker written after `status`: one listing of that directory tells the
                  host's observation step every run there that finished

No worker waits for a run: each call here is one short exchange over the worker's session to the host, and a
worker killed between calls loses nothing, because the next look reads the same files. Looking at a running
run (`finished_runs`, `sighting`, `read_output`, `look`, `final_state`) only reads files and lists one
directory over SFTP: it starts no shell and no process on the host. `flock -n` on a per-target lock file keeps
two benchmarks off one target even if the database were wrong, and `timeout` kills a runaway on the
target when no worker is left to cancel it.

Paths are data, never text to re-parse. Every path sent passes jobs/paths.py first; the run directory is
computed here as <base>/<uuid>, the host only confirms the base it resolved; and every answer is a marker
and then fields that each end with a NUL byte, which no shell value can hold, so no value (a path, a file
the run wrote, the tail of its output) can end a field early or forge another. The clean-up removes only
<base>/<uuid>, compared first, in the same command, with the base as the host resolves it.
"""

# The parts, in the order a run meets them; callers import from `jobs.remote` itself:
#   protocol   the run directory's paths, the Plan, the error, reading the host's answers
#   wrapper    the run.sh a run's directory holds
#   launching  preflight, upload, launch, claim_launch
#   looking    poll (one command), and the SFTP-only looks: finished_runs, sighting, read_output, look, final_state
#   ending     cancel, cleanup
#   clock      clock_probes: the host's realtime clock read over the session (a group member's offset)

from jobs.remote.clock import PROBES, clock_probes, host_time
from jobs.remote.ending import cancel, cleanup
from jobs.remote.launching import Preflight, claim_launch, launch, preflight, upload
from jobs.remote.looking import Sighting, final_state, finished_runs, look, poll, read_file, read_output, sighting
from jobs.remote.protocol import (
    DEFAULT_BASE,
    LOCK_BUSY_STATUS,
    TAIL_BYTES,
    WATCHDOG_STATUS,
    Plan,
    PollResult,
    RemoteError,
    answer_fields,
    base_expression,
    done_dir,
    done_marker,
    lock_path_for,
    resolved_base,
    run_dir_for,
)
from jobs.remote.wrapper import wrapper_script

__all__ = [
    "DEFAULT_BASE",
    "LOCK_BUSY_STATUS",
    "PROBES",
    "TAIL_BYTES",
    "WATCHDOG_STATUS",
    "Plan",
    "PollResult",
    "Preflight",
    "RemoteError",
    "Sighting",
    "answer_fields",
    "base_expression",
    "cancel",
    "claim_launch",
    "cleanup",
    "clock_probes",
    "done_dir",
    "done_marker",
    "final_state",
    "finished_runs",
    "host_time",
    "launch",
    "lock_path_for",
    "look",
    "poll",
    "preflight",
    "read_file",
    "read_output",
    "resolved_base",
    "run_dir_for",
    "sighting",
    "upload",
    "wrapper_script",
]
