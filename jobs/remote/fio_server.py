"""A group run by fio's own client/server mode (docs/user-guide/groups.md#running-with-fios-own-clientserver-mode):
the member's side on its host, and the client's output read back a member at a time (pure).

On each member's host the wrapper runs `fio --server=sock:<run dir>/server/fio.sock` where it would run the job:
after the same last check before the first byte, under the same lock and watchdog. fio makes its socket readable
and writable by everyone whatever the umask, so it lives in a directory of mode 0700: only the login user (and
root) can reach it, and nothing listens on a port. The worker's fio client reaches each socket over the member's
SSH session (jobs/ssh/sockets.py), sends each member its own job file (`client_job`: with a per-second IOPS log),
and writes one output for all of them, read back a member at a time by jobs/tools/fio_server_output.py.
"""

from __future__ import annotations

import re

from jobs.remote.protocol import RemoteError

SERVER_DIR = "server"
SOCKET_NAME = "fio.sock"
# sun_path is 108 bytes on Linux with its NUL, 104 on the BSDs: a longer path cannot be bound.
MAX_SOCKET_PATH = 103
# The per-second IOPS log the client asks of every member: averaged over each second, stamped in Unix epoch
# milliseconds on the member's clock (so its first entry also says when the member's job started).
LOG_NAME = "benchweb"
LOG_LINES = (f"write_iops_log={LOG_NAME}", "log_avg_msec=1000", "log_unix_epoch=1")
# A server prefixes the test files it lays out with the client's address unless told not to: the run's own file
# names (benchweb-<run>…) are what the clean-up and the safety rules know.
CLIENT_LINES = ("unique_filename=0", *LOG_LINES)
# The last check again at each job's first byte, in the run directory (fio's server runs there).
LAST_CHECK = "guard.last.sh"
# The wrapper's lines before the server starts: the socket's directory, only the login user's.
SERVER_SETUP = f"umask 077\nmkdir -m 700 {SERVER_DIR} 2>/dev/null || chmod 700 {SERVER_DIR}\n"


def socket_path(run_dir: str) -> str:
    return f"{run_dir}/{SERVER_DIR}/{SOCKET_NAME}"


def socket_problem(run_dir: str, host_name: str) -> str:
    """Why fio's server cannot listen in this run directory ("" when it can): a Unix socket's path has a limit."""
    path = socket_path(run_dir)
    if len(path.encode()) <= MAX_SOCKET_PATH:
        return ""
    return (
        f"fio's server socket would be {path} ({len(path.encode())} bytes), longer than a Unix socket's path may be "
        f"({MAX_SOCKET_PATH}): choose a shorter run directory on {host_name}'s page, or run the group with "
        "benchweb's synchronisation"
    )


def server_argv(job_argv: list[str], run_dir: str) -> list[str]:
    """fio's server in place of the job: the same fio, read-only when the job was (--readonly is fio's process-wide
    switch, so the server refuses a write job the client might send)."""
    readonly = ["--readonly"] if "--readonly" in job_argv else []
    return [job_argv[0], *readonly, f"--server=sock:{socket_path(run_dir)}"]


def client_job(jobfile: str, *, checked: bool) -> str:
    """The member's job file as the client sends it: its measured job (the last section) also logs IOPS a second,
    and its test file keeps the run's own name. A write run's every job first runs the last check again, right
    before its first byte (`checked`: the script the launch left in the run directory, jobs/safety/guard.py); it
    comes first, as a [global] section of its own, so every job has it (profiles may not name exec_prerun)."""
    first = f"[global]\nexec_prerun=sh {LAST_CHECK}\n" if checked else ""
    return first + jobfile.rstrip("\n") + "\n" + "\n".join(CLIENT_LINES) + "\n"


def job_name(jobfile: str) -> str:
    """The measured job's section name (the last one): how the client's output names the member's entries."""
    names: list[str] = re.findall(r"^\[([^\]\n]+)\]\s*$", jobfile, re.MULTILINE)
    if not names:
        raise RemoteError("the member's job file has no job section")
    return names[-1]
