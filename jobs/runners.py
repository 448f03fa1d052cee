"""What differs between fio and ndisk64 when a run is started, watched and judged on a target.

jobs/tools/ knows each tool's command line and output; jobs/remote/ knows the run directory. This module
joins them: it checks the tool is installed, says which files to upload and collect, reads live progress,
and turns the collected files into a run outcome (succeeded / failed) with an explanation.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.analysis import steady
from jobs.remote import LOCK_BUSY_STATUS, WATCHDOG_STATUS
from jobs.tools import bounds, completion, fio, fio_fill, ndisk
from jobs.tools.options import ToolOptionError
from jobs.tools.summary import ParseError, ParseResult, finite

log = logging.getLogger(__name__)

# The watchdog's allowance beyond the run's own time (see watchdog_seconds): starting the tool, opening and
# closing its files, removing them and writing the result take seconds; two minutes is a margin, not a budget.
WATCHDOG_MARGIN_S = 120
# timeout(1) in the wrapper (jobs/remote/wrapper.py, `timeout -k 30`) sends KILL this long after TERM; it then exits
# KILLED_STATUS (128 + SIGKILL) instead of WATCHDOG_STATUS.
WATCHDOG_KILL_S = 30
KILLED_STATUS = 137
# The slowest write rate a test file is assumed to be laid out at: a small cloud volume (~25 MB/s) or a busy disk.
LAYOUT_BYTES_PER_S = 20 * 2**20


class ToolUnavailable(Exception):
    """The tool cannot run on the target; the message says how to install or point to it."""


@dataclass(frozen=True)
class Outcome:
    state: str  # succeeded | failed
    explanation: str
    summary: dict[str, Any] | None
    raw_output: str
    raw_stderr: str
    # A succeeded run's steady-state stamp (jobs/analysis/steady.py).
    steady_state: dict[str, Any] | None = None


def writes(params: dict[str, Any]) -> bool:
    """Whether the run writes to its target: a write or mixed mode, or a preconditioning fill before a read."""
    if params.get("tool") == "ndisk64":
        return int(params.get("read_percent", 0)) < 100
    return params.get("rw") not in fio.READ_ONLY_MODES or params.get("precondition") == fio_fill.FILL


def expected_seconds(params: dict[str, Any]) -> int:
    return int(params.get("runtime_s") or 0) + int(params.get("ramp_time_s") or 0) + fill_seconds(params)


def fill_seconds(params: dict[str, Any]) -> int:
    """The time allowed for a preconditioning fill, at the floor rate test files are laid out at:

        ceil(precondition_passes * bytes of one pass / LAYOUT_BYTES_PER_S)

    One pass writes the whole device (its size, which the launch puts in the parameters as
    precondition_pass_bytes once the probe has said it) or the run's test files (size_bytes * jobs). Before
    the launch a device's fill counts only its test region, as nothing else is known yet.
    """
    if params.get("precondition") != fio_fill.FILL:
        return 0
    one_pass = params.get("precondition_pass_bytes") or needed_bytes(params, "directory") or 0
    return -(-int(params.get("precondition_passes") or 1) * int(one_pass) // LAYOUT_BYTES_PER_S)  # rounded up


def needed_bytes(params: dict[str, Any], kind: str) -> int | None:
    """Free space a directory target needs for the test files (a device needs none)."""
    if kind != "directory" or not params.get("size_bytes"):
        return None
    return int(params["size_bytes"]) * int(params.get("jobs") or 1)


def watchdog_seconds(params: dict[str, Any], kind: str = "directory") -> int:
    """How long a run may take on the host before its `timeout` watchdog stops it, in whole seconds:

        runtime_s + ramp_time_s + fill_seconds + ceil(size_bytes * jobs / LAYOUT_BYTES_PER_S) + WATCHDOG_MARGIN_S

    fio and ndisk64 both stop on their own at runtime (fio after its ramp; ndisk64 has none, and its
    parameters carry no ramp). The layout term counts only where the tool first writes its test files, a
    directory; a device is used in place. Without the kind, a run is assumed to lay out, which only ever
    allows more. Anything past this bound is a runaway: the host kills it even with every worker gone.
    """
    layout_s = -(-(needed_bytes(params, kind) or 0) // LAYOUT_BYTES_PER_S)  # rounded up
    return expected_seconds(params) + layout_s + WATCHDOG_MARGIN_S


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _status_explanation(
    tool: str, exit_status: int | None, params: dict[str, Any], elapsed_s: float | None, limit_s: int | None
) -> str | None:
    if exit_status == LOCK_BUSY_STATUS:
        return "the target was busy: another benchmark held benchweb's lock on it, so this one did not run"
    limit = limit_s or watchdog_seconds(params)
    if exit_status == WATCHDOG_STATUS:
        return time_limit_explanation(tool, params, limit, killed=False)
    if exit_status == KILLED_STATUS and elapsed_s is not None and elapsed_s >= limit + WATCHDOG_KILL_S - 1:
        # 137 is any SIGKILL; only the watchdog's comes WATCHDOG_KILL_S after the limit (the host's clock, which
        # starts just before timeout does, so never later; a wrapper without date +%N rounds down to the second).
        return time_limit_explanation(tool, params, limit, killed=True)
    return None


def time_limit_explanation(tool: str, params: dict[str, Any], limit_s: int, *, killed: bool) -> str:
    """Why a run stopped by the watchdog ended, with the limit, what it is made of, and what changes it."""
    parts = [f"the profile's runtime {int(params.get('runtime_s') or 0)} s"]
    if params.get("ramp_time_s"):
        parts.append(f"ramp {int(params['ramp_time_s'])} s")
    if fill := fill_seconds(params):
        parts.append(f"{fill} s for the preconditioning fill")
    layout = limit_s - expected_seconds(params) - WATCHDOG_MARGIN_S
    if layout > 0:
        parts.append(f"{layout} s to lay out its test files")
    parts.append(f"a {WATCHDOG_MARGIN_S} s allowance")
    how = (
        f"with TERM, and with KILL {WATCHDOG_KILL_S} s later as it had not stopped (exit status {KILLED_STATUS})"
        if killed
        else f"with TERM (exit status {WATCHDOG_STATUS})"
    )
    return (
        f"stopped by benchweb's time limit on the host: {tool} was still running {limit_s} s after it started "
        f"({' + '.join(parts)}), so the watchdog stopped it {how}. It ran far past its runtime: the target "
        "stalled or is much slower than the profile expects. The limit follows the profile: a smaller file size "
        "or fewer precondition passes shortens the run, a longer runtime lengthens the limit."
    )


def _exit_words(tool: str, exit_status: int | None, elapsed_s: float | None, limit_s: int | None) -> str:
    """'fio exited with status N', saying for 137 that it was a SIGKILL before benchweb's time limit."""
    if exit_status == KILLED_STATUS and elapsed_s is not None:
        limit = f" ({limit_s} s, then KILL {WATCHDOG_KILL_S} s later)" if limit_s else ""
        return (
            f"{tool} was killed with SIGKILL (exit status {KILLED_STATUS}) after {elapsed_s:g} s, not by benchweb's "
            f"time limit{limit}: by someone on the host, or by the kernel's out-of-memory killer"
        )
    return f"{tool} exited with status {exit_status}"


class FioRunner:
    output_file = "result.json"
    collect_files = ("result.json", "stdout", "stderr")
    # fio writes a status document a second into its output: live figures come from the last two.
    live_output = True

    def check_command(self, host: Any) -> str:
        return "command -v fio >/dev/null 2>&1 && fio --version"

    def check_result(self, output: str, status: int | None, host: Any) -> str:
        """fio's version, or ToolUnavailable saying how to install it."""
        version = output.strip()
        if status != 0 or not version.startswith("fio-"):
            raise ToolUnavailable(
                f"fio is not installed on {host.name}: install it there (Debian/Ubuntu: sudo apt-get install fio; "
                "RHEL/Fedora: sudo dnf install fio) and run again"
            )
        return version.removeprefix("fio-")

    def build(
        self, params: dict[str, Any], target: str, kind: str, run_dir: str, run_uuid: str
    ) -> tuple[list[str], dict[str, bytes], str]:
        try:
            job = fio.build_fio_job(params, target, kind, run_dir, readonly=not writes(params))
        except ToolOptionError as exc:
            raise ToolUnavailable(f"the profile cannot be run: {exc}") from exc
        return (
            job.argv,
            {"job.fio": job.jobfile.encode()},
            f"{job.argv_quoted()}\n\n# {job.jobfile_path}\n{job.jobfile}",
        )

    def progress(self, tail: str, params: dict[str, Any]) -> dict[str, Any]:
        """IOPS of the latest interval: the difference between the last two cumulative status documents in the
        output's tail (the first one alone is its own first interval), and when that interval ended (iops_at_s,
        seconds of fio's runtime). While a preconditioning fill runs, what it has written instead, and the
        phase "precondition"."""
        docs = _complete_documents(tail)
        if not docs:
            return {}
        written = fio_fill.filling(docs[-1])
        if written is not None:
            return {"phase": "precondition", "precondition_bytes": written}
        docs = [fio_fill.measured_only(doc) for doc in docs]
        rates = _interval_iops(docs[-2] if len(docs) > 1 else {}, docs[-1])
        progress = {f"{d}_iops": rates[d] for d in ("read", "write") if rates.get(d) is not None}
        ended_ms = max(_counters(docs[-1], "read", "runtime") + _counters(docs[-1], "write", "runtime"), default=0)
        return progress | {"iops_at_s": round(ended_ms / 1000, 1)} if progress else {}

    def interpret(
        self,
        outputs: dict[str, bytes],
        exit_status: int | None,
        params: dict[str, Any],
        *,
        elapsed_s: float | None = None,
        limit_s: int | None = None,
    ) -> Outcome:
        """The run's outcome from what fio left. It succeeded only when fio's output reports the measured job
        done (completion.not_measured): an abort, a job with no I/O or no result at all fails it, quoting fio.
        elapsed_s (the host's clock) and limit_s (the watchdog's) tell a watchdog's KILL from another one."""
        raw, stdout, stderr = _text(outputs["result.json"]), _text(outputs["stdout"]), _text(outputs["stderr"])
        # With --output fio sends its own messages into the same file (and some to stderr as well); stdout/stderr
        # hold the shell's.
        raw_stderr = "\n".join(part for part in (stdout.strip(), stderr.strip()) if part)
        special = _status_explanation("fio", exit_status, params, elapsed_s, limit_s)
        if special:
            return Outcome("failed", special, None, raw, raw_stderr)
        said = completion.tool_lines(raw, raw_stderr)
        exited = _exit_words("fio", exit_status, elapsed_s, limit_s)
        try:
            parsed = _parse(fio.parse_fio_json, raw)
        except ParseError as exc:
            if said:
                status = f" ({exited})" if exit_status is not None else ""
                why = f"fio left no result{status}; fio said: {completion.quoted(said)}"
            elif exit_status:
                tail = (raw_stderr or raw).strip().splitlines()[-3:]
                why = f"{exited}; it left no result ({' / '.join(tail) or 'no output'})"
            else:
                why = f"fio's output could not be read: {exc}"
            return Outcome("failed", why, None, raw, raw_stderr)
        summary = parsed.summary_with_bins()
        if parsed.job_errors:
            errors = "; ".join(
                f"job {e['job']} error {e['errno']}" + (f" ({e['message']})" if e.get("message") else "")
                for e in parsed.job_errors
            )
            return Outcome("failed", f"fio reported an error: {errors}", summary, raw, raw_stderr)
        if exit_status not in (0, None):
            words = f"; fio said: {completion.quoted(said)}" if said else ""
            return Outcome("failed", exited + words, summary, raw, raw_stderr)
        unfinished = completion.not_measured(parsed, tool="fio", said=said)
        if unfinished:
            # No figure of this run is a measurement: the summary is not kept, the raw output is.
            return Outcome("failed", unfinished, None, raw, raw_stderr)
        stamp = steady.stamp(parsed.steadystate, summary["samples"], time_based=params.get("time_based", True))
        return Outcome("succeeded", "", summary, raw, raw_stderr, stamp)


class NdiskRunner:
    output_file = "stdout"
    collect_files = ("stdout", "stderr")
    live_output = False

    def check_command(self, host: Any) -> str:
        return f"command -v {shlex.quote(host.ndisk64_path or 'ndisk64')}"

    def check_result(self, output: str, status: int | None, host: Any) -> str:
        path = host.ndisk64_path or "ndisk64"
        if status != 0:
            raise ToolUnavailable(
                f"ndisk64 was not found on {host.name} ({path}): copy IBM nstress's ndisk64 there and put it on "
                "the login user's PATH, or set its full path on the host page"
            )
        self._path = output.strip().splitlines()[-1] if output.strip() else path
        return ""

    def build(
        self, params: dict[str, Any], target: str, kind: str, run_dir: str, run_uuid: str
    ) -> tuple[list[str], dict[str, bytes], str]:
        try:
            argv = ndisk.build_ndisk_argv(params, target, kind, run_dir)
        except ToolOptionError as exc:
            raise ToolUnavailable(f"the profile cannot be run: {exc}") from exc
        argv[0] = getattr(self, "_path", argv[0])
        return argv, {}, " ".join(shlex.quote(a) for a in argv)

    def progress(self, tail: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}  # ndisk64 prints its numbers only at the end

    def interpret(
        self,
        outputs: dict[str, bytes],
        exit_status: int | None,
        params: dict[str, Any],
        *,
        elapsed_s: float | None = None,
        limit_s: int | None = None,
    ) -> Outcome:
        """The run's outcome from ndisk64's report: it succeeded only when the report's totals show I/O."""
        raw, stderr = _text(outputs["stdout"]), _text(outputs["stderr"])
        special = _status_explanation("ndisk64", exit_status, params, elapsed_s, limit_s)
        if special:
            return Outcome("failed", special, None, raw, stderr)
        said = [line.strip() for line in stderr.splitlines() if line.strip()][-3:]
        try:
            parsed = _parse(ndisk.parse_ndisk, raw)
        except ParseError as exc:
            # nstress tools exit 1 even on success, so the parsed report, not the status, decides.
            words = f"; ndisk64 said: {completion.quoted(said)}" if said else ""
            return Outcome("failed", f"ndisk64 printed no result (exit status {exit_status}): {exc}{words}", None,
                           raw, stderr)  # fmt: skip
        unfinished = completion.not_measured(parsed, tool="ndisk64", said=said)
        if unfinished:
            return Outcome("failed", unfinished, None, raw, stderr)
        return Outcome("succeeded", "", parsed.summary, raw, stderr, steady.judge(parsed.summary["samples"]))


def _parse(parse: Callable[[str], ParseResult], raw: str) -> ParseResult:
    """parse(raw); any other exception than ParseError (a parser bug) becomes one, logged with its traceback.

    The run then fails with the reason and keeps its raw output, instead of the worker's task dying and the run
    staying "collecting" until the sweep retries the same crash.
    """
    try:
        return parse(raw)
    except ParseError:
        raise
    except Exception as exc:
        log.exception("%s could not read this output", parse.__name__)
        raise ParseError(
            f"benchweb could not read it ({type(exc).__name__}: {exc}); this is a bug, please "
            "report it with the run's raw output, which is kept"
        ) from exc


def for_parameters(params: dict[str, Any]) -> FioRunner | NdiskRunner:
    return NdiskRunner() if params.get("tool") == "ndisk64" else FioRunner()


Tool = FioRunner | NdiskRunner


# A run directory of the shape jobs/remote/ gives one, for building a command before any run exists.
_CHECK_RUN_DIR = "/home/benchweb/.benchweb/runs/00000000-0000-4000-8000-000000000000"


@dataclass(frozen=True)
class Unrunnable:
    """Why a profile cannot run on a target: a few words for a disabled choice, and the reason with the fix."""

    field: str
    short: str
    message: str


def build_problem(params: dict[str, Any], target: str, kind: str) -> Unrunnable | None:
    """Why the tool's command for these parameters cannot be built for this target, or None when it can.

    It builds the very command a launch builds (only the run directory is a stand-in), so a profile that passes
    here is never refused by the launch for its parameters, and one refused here would have failed there.
    """
    try:
        if params.get("tool") == "ndisk64":
            ndisk.build_ndisk_argv(params, target, kind, _CHECK_RUN_DIR)
        else:
            fio.build_fio_job(params, target, kind, _CHECK_RUN_DIR, readonly=not writes(params))
    except ToolOptionError as exc:
        if exc.field != "size_bytes":
            return Unrunnable(exc.field, f"cannot be built: {exc.field}", str(exc))
        if kind == "directory" and params.get("tool") != "ndisk64":
            return Unrunnable(
                "size_bytes",
                "raw device only",
                "it has no file size, so it runs on a whole block device only: in a directory fio needs a size "
                "for its test file. Choose a profile with a size, or give this one a file size (a copy, if it "
                "is a preset).",
            )
        return Unrunnable("size_bytes", "needs a size", f"{exc} Give the profile a file size (a copy of a preset).")
    return None


_DOCUMENT_START = b'{\n  "fio version"'


def progress_tail(tail: bytes, *, keep_bytes: int = 256 * 1024) -> bytes:
    """What of an output's tail the next live figure can still need: from the start of its second-to-last
    status document on (progress() takes the last two), or at most its last `keep_bytes`."""
    last = tail.rfind(_DOCUMENT_START)
    if last > 0:
        before = tail.rfind(_DOCUMENT_START, 0, last)
        if before >= 0:
            return tail[before:]
    return tail[-keep_bytes:]


def _complete_documents(tail: str) -> list[dict[str, Any]]:
    """The whole status documents in a tail that may start and end mid-document."""
    start = tail.find('{\n  "fio version"')
    if start < 0:
        return []
    try:
        docs, _ = fio.fio_json_documents(tail[start:])
    except ParseError:
        return []
    return docs


def _interval_iops(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    rates: dict[str, float | None] = {}
    for direction in ("read", "write"):
        ios = [sum(_counters(doc, direction, "total_ios")) for doc in (before, after)]
        ms = [max(_counters(doc, direction, "runtime"), default=0) for doc in (before, after)]
        if ms[1] > ms[0] and ios[1] >= ios[0]:
            rate = (ios[1] - ios[0]) * 1000.0 / (ms[1] - ms[0])
            # Shown live and kept in the run's progress: a rate beyond any disk is a damaged document, not a number.
            rates[direction] = rate if rate <= bounds.MAX_IOPS else None
        elif ios[1] == 0:
            rates[direction] = None
    return rates


def _counters(doc: dict[str, Any], direction: str, key: str) -> list[float]:
    """One counter of every job of a status document; what is not a finite number (nan, a string) counts as 0,
    so a damaged document in the tail cannot stop the poll."""
    jobs = doc.get("jobs")
    jobs = jobs if isinstance(jobs, list) else []
    return [
        finite(data.get(key)) or 0.0
        for job in jobs
        if isinstance(job, dict) and isinstance(data := job.get(direction), dict)
    ]
