"""Ending a run on the host: stopping everything it started, and removing its directory and test files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs import paths
from jobs.remote.protocol import DEFAULT_BASE, RemoteError, base_expression, checked_uuid, done_marker, q, split_base

if TYPE_CHECKING:  # paramiko is loaded where a session is opened
    from jobs.ssh import Connection


def cancel(conn: Connection, run_dir: str) -> None:
    """Stop everything the run started: its whole session (the watchdog puts fio in a group of its own)."""
    d = q(run_dir)
    conn.run(
        f"""pid=$(cat {d}/pid 2>/dev/null) || exit 0
case "$pid" in ''|*[!0-9]*) exit 0;; esac
ps -p "$pid" -o args= 2>/dev/null | grep -q run.sh || exit 0
pkill -TERM -s "$pid" 2>/dev/null || kill -TERM -- -"$pid" 2>/dev/null
i=0; while [ $i -lt 20 ] && pgrep -s "$pid" >/dev/null 2>&1; do sleep 0.5; i=$((i+1)); done
pkill -KILL -s "$pid" 2>/dev/null || true
""",
        timeout=60,
    )


def cleanup(conn: Connection, run_dir: str, test_files_glob: str | None, *, base: str, run_uuid: str) -> None:
    """Remove the run directory, its done marker and, for directory targets, the run's own test files: one
    command in the session's long-lived shell, which checks before it removes.

    `base` is the host's run directory as configured (Host.run_base_dir). Only <base>/<run_uuid> is removed:
    checked here before anything is sent, and again by the host in the same command that removes: the directory
    above the run directory must be, on the host, the very directory the configured base is there (both
    resolved by the host, `cd -P` then `pwd -P`, a base in the login user's home from "$HOME"). A symbolic link
    inside the run directory is removed, never followed."""
    from jobs.ssh import SSHError

    _check_run_dir(run_dir, base, run_uuid)
    test_dir = _own_test_files_dir(test_files_glob, run_uuid)
    # rm -r removes a symbolic link inside (or as) the run directory, never what it points to. A run directory
    # already gone (a second clean-up) leaves nothing to compare there and nothing to remove.
    # `&& echo .` keeps a trailing newline of a name, which $(...) would strip, in the comparison.
    script = [
        f"parent=$(cd -P -- {q(run_dir.rpartition('/')[0])} 2>/dev/null && pwd -P && echo .)",
        f"expected=$(cd -P -- {base_expression(base)} 2>/dev/null && pwd -P && echo .)",
        f"""if [ -n "$parent" ] && [ "$parent" != "$expected" ]; then printf '%s' "${{expected%?.}}"; \
exit {_CLEANUP_REFUSED}; fi""",
    ]
    if test_dir is not None:
        # The UUID is checked (hex digits and dashes), so the glob is the one unquoted word, and it matches only
        # this run's own files; -f alone removes no directory.
        star = "*" if (test_files_glob or "").endswith("*") else ""
        script.append(f"rm -f -- {q(test_dir)}/benchweb-{checked_uuid(run_uuid)}{star} || exit 1")
    script.append(f'[ -z "$parent" ] || rm -rf -- {q(run_dir)} {q(done_marker(run_dir))}')
    try:
        # Over SFTP the same took three realpath exchanges and then this command (before that, some fifteen
        # exchanges a run); each waits for the host, which a busy host makes slow. Checking in the command that
        # removes also leaves no time between the check and the removal.
        done = conn.run("\n".join(script), timeout=120)
    except SSHError as exc:
        raise RemoteError(f"could not remove {paths.shown(run_dir)} on the host ({exc}); remove it by hand") from exc
    if done.exit_status == _CLEANUP_REFUSED:
        expected = done.stdout.decode(errors="replace") or base
        raise RemoteError(
            f"refused to remove {paths.shown(run_dir)}: it is not this run's directory in the host's run directory "
            f"{paths.shown(expected)} (changed since the run started?); nothing was removed, remove it by hand"
        )
    if done.exit_status != 0:
        why = done.stderr.decode(errors="replace").strip()[-300:] or f"rm exited with status {done.exit_status}"
        raise RemoteError(f"could not remove {paths.shown(run_dir)} on the host ({why}); remove it by hand")


# The exit status of a clean-up the host refused (the run directory is not in the base it resolves).
_CLEANUP_REFUSED = 3


def _own_test_files_dir(test_files_glob: str | None, run_uuid: str) -> str | None:
    """The directory of a run's own test files (`<dir>/benchweb-<uuid>` or `<dir>/benchweb-<uuid>*`), else a
    refusal: nothing else is ever removed there."""
    if not test_files_glob:
        return None
    directory, _, pattern = test_files_glob.rpartition("/")
    if pattern not in (f"benchweb-{run_uuid}", f"benchweb-{run_uuid}*") or paths.problem(directory):
        raise RemoteError(f"refusing to remove files that are not this run's own: {test_files_glob!r}")
    return directory


def _check_run_dir(run_dir: str, base: str, run_uuid: str) -> None:
    """Refuse, before sending anything, a run directory that is not <base>/<run_uuid>. A base in the login
    user's home is only known up to the home here; the host checks the whole path."""
    in_home, rest = split_base(base)
    suffix = f"/{checked_uuid(run_uuid)}"
    parent = run_dir.removesuffix(suffix)
    if in_home:
        fits = not rest or parent.endswith(f"/{rest}")
    else:
        fits = parent == rest
    if paths.problem(run_dir) or not run_dir.endswith(suffix) or not fits:
        raise RemoteError(
            f"refused to remove {paths.shown(run_dir)}: it is not <run directory>/{run_uuid} for the run directory "
            f"{base or DEFAULT_BASE!r}; nothing was removed"
        )
