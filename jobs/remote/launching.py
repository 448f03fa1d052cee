"""Starting a run: the preflight (one round trip: the run directory, the tool check, the read-only probes), the
upload of its files, and the atomic launch (or the claim that keeps it from ever starting)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs import paths
from jobs.remote.protocol import (
    Plan,
    RemoteError,
    answer_fields,
    base_expression,
    checked_uuid,
    int_or_none,
    q,
    read_fields,
    resolved_base,
    run_dir_for,
)

if TYPE_CHECKING:  # paramiko is loaded where a session is opened
    from jobs.ssh import Connection


@dataclass(frozen=True)
class Preflight:
    base: str
    run_dir: str
    launched: bool
    tool_status: int | None
    tool_output: str
    safety_report: str
    environment_report: str = ""


def preflight(
    conn: Connection, base: str, run_uuid: str, tool_check: str, safety_script: str, environment_script: str = ""
) -> Preflight:
    """One round trip before a launch: make the run directory, say whether this UUID was already launched,
    check the tool, and run the read-only safety probe (every shell start costs ~0.1-0.3 s on a busy host).

    The answer: the marker, then answer, $HOME, the base the host resolved, launched, the tool check's
    status and its output's length in bytes, each ended by NUL; then that many bytes of tool output; then
    the safety report; then, with an environment script, NUL benchweb-environment NUL and its report (neither
    probe can print a NUL, so neither can end the safety report early or forge the other). The run directory is
    not read back: it is <base>/<uuid>, computed here. The tool check's output goes through a file named with
    the shell's pid: two attempts at one run's launch at once (a sweep re-sent it while the first waited in the
    queue) each read their own. Its first line, when the check succeeded, is `tool_said` for the environment
    probe, which then takes fio's version from it rather than starting fio a second time (some 20 ms of the
    host's CPU each)."""
    expression = base_expression(base)
    d = q(checked_uuid(run_uuid))
    home_check = 'case "$HOME" in /*) ;; *) answer=home;; esac\n' if expression.startswith('"$HOME"') else ""
    script = f"""base={expression}
d="$base"/{d}
answer=ok launched=no
{home_check}[ $answer = ok ] && ! mkdir -p "$d" "$base/locks" "$base/done" 2>/dev/null && answer=mkdir
[ $answer = ok ] && [ -d "$d/launched" ] && launched=yes
printf '\\0benchweb-preflight\\0%s\\0%s\\0%s\\0%s\\0' "$answer" "$HOME" "$base" "$launched"
[ $answer = ok ] || exit 0
out="$d/preflight.$$.out"
( {tool_check} ) >"$out" 2>&1
status=$?
tool_said=
[ $status = 0 ] && IFS= read -r tool_said <"$out"
printf '%s\\0%s\\0' "$status" "$(wc -c <"$out")"
cat "$out"; rm -f "$out"
(
{safety_script}
)
{_environment_section(environment_script)}"""
    out = conn.run(script, timeout=120).stdout
    (answer, home, resolved, launched), rest = answer_fields(out, "preflight", 4)
    if answer == "home":
        raise RemoteError(
            f"the login user's home on the host is not an absolute path (HOME={paths.shown(home)}), so the run "
            f"directory {base!r} means nothing there; set an absolute run directory on the host page"
        )
    if answer == "mkdir":
        raise RemoteError(
            f"cannot create the run directory in {paths.shown(resolved)} on the host; check that the login user may "
            "write there, or choose another run directory on the host page"
        )
    if answer != "ok":
        raise RemoteError(f"the preflight on the host answered {out[:300]!r}")
    expected = resolved_base(base, home)
    _check_resolved(resolved, expected)
    (status, length), rest = read_fields(rest, 2, out)
    size = int_or_none(length.strip())
    if size is None or size > len(rest):
        raise RemoteError(f"the preflight on the host answered a tool check of {length!r} bytes: {out[:300]!r}")
    safety_report, _, environment_report = rest[size:].partition(_ENVIRONMENT_MARKER)
    return Preflight(
        base=resolved,
        run_dir=run_dir_for(resolved, run_uuid),
        launched=launched == "yes",
        tool_status=int_or_none(status),
        tool_output=rest[:size].decode(errors="replace"),
        safety_report=safety_report.decode(errors="replace"),
        environment_report=environment_report.decode(errors="replace"),
    )


_ENVIRONMENT_MARKER = b"\0benchweb-environment\0"


def _environment_section(environment_script: str) -> str:
    """The environment probe after the safety probe, in the same exchange, behind its own marker."""
    if not environment_script:
        return ""
    return f"printf '\\0benchweb-environment\\0'\n(\n{environment_script}\n)\n"


def _check_resolved(resolved: str, expected: str) -> None:
    """The base the host used is the one benchweb computed, and one that may hold run directories."""
    if resolved != expected:
        raise RemoteError(
            f"the host resolved the run directory to {paths.shown(resolved)}, not {paths.shown(expected)}; nothing was "
            "started: check the login user's home and the run directory on the host page"
        )
    try:
        paths.check(resolved, field="run directory as the host resolved it (check the login user's home)", home=True)
    except paths.PathError as exc:
        raise RemoteError(f"{exc} Nothing was started.") from exc


def upload(conn: Connection, plan: Plan) -> None:
    """Put the run's files in its directory (SFTP starts no shell). Nothing runs yet: a failure here means
    the run was never started."""
    for name, data in plan.files.items():
        conn.put_file(f"{plan.run_dir}/{name}", data, mode=0o700 if name.endswith(".sh") else 0o600)


def launch(conn: Connection, plan: Plan) -> bool:
    """Start the uploaded run (see upload) detached; False when this UUID was already launched: the atomic
    mkdir makes a second launch a no-op, never a second benchmark. From the moment this command is sent the
    host may have started the run, whatever happens to its answer: the caller records that first."""
    command = (f"cd {q(plan.run_dir)} && if mkdir launched 2>/dev/null; then "
               "setsid sh run.sh </dev/null >wrapper.log 2>&1 & echo started; else echo already; fi")  # fmt: skip
    return _one_word(conn, command, {"started", "already"}, doing="launch") == "started"


def claim_launch(conn: Connection, run_dir: str) -> bool:
    """Take this run's launch without starting it (the same atomic `mkdir launched` as `launch`), so that nothing
    starts it from now on; False when a launch took it first (the run may be running). A run directory that is
    gone cannot be launched either (`launch` starts in it): True."""
    command = (f"cd {q(run_dir)} 2>/dev/null || {{ echo gone; exit 0; }}; "
               "if mkdir launched 2>/dev/null; then echo claimed; else echo taken; fi")  # fmt: skip
    return _one_word(conn, command, {"claimed", "taken", "gone"}, doing="taking the launch") != "taken"


def _one_word(conn: Connection, command: str, words: set[str], *, doing: str) -> str:
    """The one word of `words` the command answers; anything else is the host's error, shown."""
    result = conn.run(command, timeout=30)
    answer = result.stdout.decode().strip()
    if answer not in words:
        raise RemoteError(f"{doing} on the host answered {answer!r} (stderr: {result.stderr.decode()[:300]})")
    return answer
