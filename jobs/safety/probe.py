"""The probe: the read-only sh script sent to a target's host, and the report it prints read back (pure).

The script itself is `probe.sh` beside this module; jobs/safety/__init__.py describes its report.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from jobs import paths
from jobs.probe_report import report_pairs

KINDS = ("directory", "block")

PROBE_PATH = Path(__file__).with_name("probe.sh")


def _probe_parts() -> tuple[str, str]:
    """The prelude and the body of probe.sh, without its header and the "#@" lines that mark the parts."""
    _header, prelude, body = re.split(r"^#@.*\n", PROBE_PATH.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return prelude, body


_PRELUDE, _BODY = _probe_parts()


def check_script(target_path: str, kind: str, *, writes: bool) -> str:
    """The sh probe for one target; every outside value goes through shlex.quote exactly once."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    head = _PRELUDE + f"kind={shlex.quote(kind)}\nwrites={'yes' if writes else 'no'}\n"
    head += 'say kind "$kind"\nsay writes "$writes"\n'
    problem = _path_problem(target_path)
    if problem:
        # The report is line-based: a newline in the path would forge lines, so print an escaped copy.
        printable = target_path.encode("unicode_escape").decode("ascii")
        return head + f"say target {shlex.quote(printable)}\nsay invalid {problem}\nsay end 1\n"
    return head + f"t={shlex.quote(target_path)}\n" + _BODY


# What _path_problem finds, as a refusal says it.
_PATH_PROBLEMS = paths.PROBLEMS


def _path_problem(target_path: str) -> str:
    # The one rule for every path sent to a host (jobs/paths.py): the model, the form and the API refuse the
    # same paths; this catches one stored before the rule existed.
    return paths.problem(target_path)


# ----------------------------------------------------------------------------------------- the report


def parse_report(text: str) -> tuple[dict[str, list[str]], bool]:
    """Values by key, in order, and whether the report was complete (header and end marker seen)."""
    pairs, complete = report_pairs(text, "benchweb_safety=1")
    values: dict[str, list[str]] = {}
    for key, value in pairs:
        values.setdefault(key, []).append(value)
    return values, complete


def _one(values: dict[str, list[str]], key: str) -> str:
    found = values.get(key)
    return found[0] if found else ""


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _unescape_octal(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _unescape_hex(text: str) -> str:
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
