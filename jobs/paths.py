"""Paths that cross the SSH boundary: a host's run directory base and a disk's target path (pure).

They reach the host's shell quoted, and benchweb then removes, writes and reports on what they name, so a
value must mean the same to sh, to the host's tools and to Python: printable characters only, no `..`, and
nothing any of them reads as the end of a line. Python's str.splitlines() also breaks at U+0085 (NEL),
U+2028 and U+2029, which sh and printf do not: the gap that once made a run directory read back as its base.
The same check runs where a value enters (model, form, API) and again before it is sent, because a value
stored before this rule existed must still be refused.

A run directory base also ends up inside the tools' job files and command lines, as part of each run's
directory, where fio splits file names at ':' and reads '$' specially: it keeps to TOOL_CHARACTERS, the one set
the tools take in a path (jobs/tools/options.py builds its own check from it). A base with a space, a quote,
'$(', a backtick or '*' was once saved and then refused by every run on it, after the run directory was made.
"""

from __future__ import annotations

import re
import unicodedata

MAX_LENGTH = 1024  # the model fields' max_length; PATH_MAX is 4096, but no real base or device path nears this
# Unicode categories refused anywhere in a path, by the code a refusal and the safety report use.
REFUSED_CATEGORIES = {
    "Cc": "control",  # C0, DEL and C1, which hold LF, CR, VT, FF, FS/GS/RS and U+0085 (NEL)
    "Zl": "separator",  # U+2028
    "Zp": "separator",  # U+2029
    "Cf": "format",  # invisible: zero-width spaces, bidi overrides that make a path read as another
    "Cs": "surrogate",  # not a character; what Python makes of bytes that are not UTF-8
    "Co": "private",
    "Cn": "unassigned",
}
# The characters fio and ndisk64 take in a path, as a regular expression's character class and in words.
TOOL_CHARACTERS = "A-Za-z0-9._+@,/-"
TOOL_CHARACTERS_SHOWN = "letters, digits and . _ + @ , - /"
_TOOL_PATH = re.compile(f"[{TOOL_CHARACTERS}]*")
# Each problem as a sentence ends: "the target path '...' <problem>".
PROBLEMS = {
    "empty": "is empty",
    "long": f"is longer than {MAX_LENGTH} characters",
    "relative": "is not absolute",
    "home": "is not absolute and does not start with ~/",
    "command": "is neither an absolute path nor a plain command name",
    "parent": "contains a '..' component",
    "control": "contains a control character",
    "separator": "contains a Unicode line separator",
    "format": "contains an invisible formatting character",
    "surrogate": "contains bytes that are not UTF-8",
    "private": "contains a private-use character",
    "unassigned": "contains an unassigned Unicode character",
    "characters": "contains a character the tools do not take in a path",
}


_COMMAND_NAME = re.compile(r"[A-Za-z0-9._+-]{1,255}")


class PathError(ValueError):
    """A path that must not cross the SSH boundary; the message names the field and the fix."""


def problem(value: str, *, home: bool = False, command: bool = False) -> str:
    """The first thing wrong with a path as a code of PROBLEMS, or "" when it may be sent to a host.

    With home, the path is a run directory base: it may also be ~ or start with ~/ (the login user's home on
    the host), and holds only TOOL_CHARACTERS after that ~; with command, it may also be a plain command name
    found on the host's PATH (letters, digits, '.', '_', '+', '-')."""
    if command and value and "/" not in value:
        return "" if _COMMAND_NAME.fullmatch(value) and value not in (".", "..") else "command"
    if not value:
        return "empty"
    if len(value) > MAX_LENGTH:
        return "long"
    for char in value:
        code = REFUSED_CATEGORIES.get(unicodedata.category(char))
        if code:
            return code
    if not (value.startswith("/") or (home and (value == "~" or value.startswith("~/")))):
        return "home" if home else "relative"
    if ".." in value.split("/"):
        return "parent"
    if home and not _TOOL_PATH.fullmatch(value.removeprefix("~")):
        return "characters"
    return ""


def check(value: str, *, field: str, home: bool = False, command: bool = False) -> str:
    """The value itself, or PathError saying what is wrong with the named field and how to fix it."""
    code = problem(value, home=home, command=command)
    if not code:
        return value
    kind, example = ("an absolute path or one starting with ~/", "/srv/benchweb/runs or ~/.benchweb/runs")
    characters = "printable characters"
    if home:
        characters = f"{TOOL_CHARACTERS_SHOWN} only,"
    if command:
        kind, example = "an absolute path or a plain command name", "/usr/local/bin/ndisk64 or ndisk64"
    elif not home:
        kind, example = "an absolute path", "/data/bench or /dev/nvme1n1"
    raise PathError(
        f"The {field} {PROBLEMS[code]} ({shown(value)}); give {kind} of {characters} without '..', e.g. {example}."
    )


def shown(value: str) -> str:
    """The value with every refused character escaped, short enough for a message."""
    escaped = value[:200].encode("unicode_escape").decode("ascii")
    return f"'{escaped}'" + ("…" if len(value) > 200 else "")
