"""Builds the fio stand-in of the capacity benches (bench only, never on a product path): standin.c compiled with
`cc -O2`, its documents made from a real recorded fio output, into a directory outside the repository.

    python bench/standin/build.py DIR [--recording FILE]   # prints DIR/bin, which holds `fio`

Put DIR/bin first on the PATH of a test host's logins (fleet.py does it with sshd's SetEnv) and benchweb runs
the stand-in where it would run fio: the same command line, job file, output file, status documents and exit.
The recording's last document is the template: its rates, latencies and percentiles are written as recorded;
its counters (I/Os, bytes, runtimes, sample counts, context switches, the disk's ticks) are scaled to the time
the job has run; its clock, its job name and job options are the run's own, as fio would print them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECORDING = ROOT / "tests" / "fixtures" / "fio-3.33-randrw-status-interval.json"
# The file every stand-in appends its output path to when it starts (standin.c's note_start), when set.
STARTS_ENV = "BENCH_STANDIN_STARTS"
DOCUMENT_START = '{\n  "fio version"'
# Keys whose whole-number value grows with the time a job has run (docs/reference/fio-output.md#json-output).
COUNTERS = frozenset({
    "io_bytes", "io_kbytes", "runtime", "total_ios", "short_ios", "drop_ios", "N", "bw_samples", "iops_samples",
    "ctx", "majf", "minf", "job_runtime", "read_ios", "write_ios", "read_merges", "write_merges", "read_ticks",
    "write_ticks", "in_queue",
})  # fmt: skip
# Keys whose value is this moment's or this run's: the piece kind standin.c writes in their place.
OWN = {"timestamp": "EPOCH", "timestamp_ms": "EPOCH_MS", "time": "CTIME", "jobname": "JOBNAME",
       "elapsed": "ELAPSED", "eta": "ETA"}  # fmt: skip
_LINE = re.compile(r'^(?P<lead>\s*"(?P<key>[^"]+)" : )(?P<value>"[^"]*"|-?\d+)(?P<rest>,?)$')


class RecordingError(Exception):
    pass


def final_document(text: str) -> str:
    """The last document of a recorded output, as fio printed it (to its closing brace and newline)."""
    start = text.rfind(DOCUMENT_START)
    if start < 0:
        raise RecordingError("the recording holds no fio JSON document")
    return text[start:].rstrip("\n") + "\n"


def pieces(document: str) -> list[tuple[str, str, int]]:
    """The document as (text before, kind, value) pieces: the text is copied as recorded, the kind says what
    standin.c writes after it."""
    out: list[tuple[str, str, int]] = []
    text: list[str] = []
    in_options = in_bins = False
    for line in document.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if in_options:
            if bare.strip() in ("}", "},"):
                out.append(("".join(text), "OPTIONS", 0))
                text, in_options = [line], False
            continue
        if bare.endswith('"job options" : {'):
            text.append(line)
            in_options = True
            continue
        if bare.endswith('"bins" : {'):
            in_bins = True
        elif in_bins and bare.strip() in ("}", "},"):
            in_bins = False
        match = _LINE.match(bare)
        kind = None
        if match:
            key, value = match["key"], match["value"]
            if key in OWN:
                kind = OWN[key]
            elif (key in COUNTERS or in_bins) and not value.startswith('"'):
                kind = "SCALED"
        if kind is None:
            text.append(line)
            continue
        quote = '"' if match and match["value"].startswith('"') else ""
        assert match is not None
        text.append(match["lead"] + quote)
        out.append(("".join(text), kind, int(match["value"]) if kind == "SCALED" else 0))
        text = [quote + match["rest"] + "\n"]
    out.append(("".join(text), "LITERAL", 0))
    return out


def recorded_runtimes(document: str) -> tuple[int, int]:
    """(the longest direction runtime in ms, the job's runtime option in s) of the recorded final document."""
    runtimes = [int(v) for v in re.findall(r'^ {8}"runtime" : (\d+),?$', document, re.MULTILINE)]
    asked = re.search(r'^ {8}"runtime" : "(\d+)",?$', document, re.MULTILINE)
    if not runtimes or not max(runtimes) or not asked:
        raise RecordingError("the recording's last document gives no runtime, or no runtime option, to scale by")
    return max(runtimes), int(asked[1])


def template_header(recording_text: str) -> str:
    """template.h for standin.c: the recording's fio version, runtimes and pieces."""
    document = final_document(recording_text)
    if document.count('"jobname" :') != 1:
        raise RecordingError("the stand-in replays a recording of one job entry (numjobs=1 or group_reporting)")
    version = re.search(r'"fio version" : "([^"]+)"', document)
    assert version is not None
    runtime_ms, runtime_s = recorded_runtimes(document)
    rows = ",\n".join(
        f"    {{{_c_string(text)}, {len(text.encode())}, {kind}, {value}LL}}" for text, kind, value in pieces(document)
    )
    return (
        f"/* Made by bench/standin/build.py from a recorded fio output; do not edit. */\n"
        f"static const char FIO_VERSION[] = {_c_string(version[1])};\n"
        f"static const long long RECORDED_RUNTIME_MS = {runtime_ms};\n"
        f"static const long long RECORDED_JOB_RUNTIME_S = {runtime_s};\n"
        f"static const struct piece PIECES[] = {{\n{rows}\n}};\n"
    )


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def build(into: Path, recording: Path = RECORDING) -> Path:
    """Compile the stand-in into `into`/bin/fio (made afresh); returns `into`/bin."""
    into = into.resolve()
    (into / "bin").mkdir(parents=True, exist_ok=True)
    (into / "template.h").write_text(template_header(recording.read_text()))
    binary = into / "bin" / "fio"
    subprocess.run(
        ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(into), "-o", str(binary), str(HERE / "standin.c")],
        check=True,
        capture_output=True,
        text=True,
    )
    return binary.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("into", type=Path, help="a directory outside the repository (or under its ignored var/)")
    parser.add_argument("--recording", type=Path, default=RECORDING, help="a recorded fio --status-interval output")
    args = parser.parse_args(argv)
    try:
        print(build(args.into, args.recording))
    except subprocess.CalledProcessError as exc:
        print(f"cc failed:\n{exc.stderr}", file=sys.stderr)
        return 2
    except RecordingError as exc:
        print(f"{args.recording}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
