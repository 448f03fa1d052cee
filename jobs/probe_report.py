"""The report a host's read-only sh probe prints (the safety probe, jobs/safety/probe.sh, and the environment
probe, jobs/environment/probe.sh): `key=value` lines between a header line and `end=1`. One reader for both, so
both keep the rule that only "\\n" ends a line."""

from __future__ import annotations


def report_pairs(text: str, header: str) -> tuple[list[tuple[str, str]], bool]:
    """(key, value) pairs in order after the line `header`, and whether the report was complete (header and end
    marker seen). Lines before the header (a login banner) and lines without '=' are not the probe's."""
    pairs: list[tuple[str, str]] = []
    started = ended = False
    # Only "\n" ends a line, as for sh and printf: str.splitlines() also breaks at U+0085, U+2028 and U+2029,
    # so a value holding one could forge a line of the report.
    for line in text.split("\n"):
        if not started:
            started = line == header
            continue
        if line == "end=1":
            ended = True
            break
        key, sep, value = line.partition("=")
        if sep:
            pairs.append((key, value))
    return pairs, started and ended
