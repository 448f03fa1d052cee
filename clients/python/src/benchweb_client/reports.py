"""The reports a pipeline keeps: JUnit XML (one test case per disk and gate, the layout Jenkins, GitLab and GitHub
read), a Markdown summary with links to the run pages, and JSON."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import Any

from benchweb_client import gates
from benchweb_client.outcome import ERRORED, FAILED, Outcome, exit_status

# Words, not emoji: every renderer and font shows them. NBSP keeps "run 12" and "3.1 ms" on one line.
ICONS = {"PASS": "PASS", "FAIL": "**FAIL**", "ERROR": "**ERROR**"}
NBSP = "\u00a0"


def junit(outcomes: list[Outcome], seconds: float, title: str) -> str:
    cases = []
    for outcome in outcomes:
        checks = outcome.checks or [gates.Check("run", gates.PASS, outcome.reason)]
        for check in checks:
            case = ET.Element("testcase", name=check.gate, classname=f"benchweb.{outcome.disk}", time="0")
            if outcome.result == ERRORED:
                ET.SubElement(case, "error", message=outcome.error, type="could-not-run").text = outcome.error
            elif check.status == gates.FAIL:
                ET.SubElement(case, "failure", message=check.message, type="gate").text = check.message
            elif check.status == gates.SKIP:
                ET.SubElement(case, "skipped", message=check.message)
            # The run page's address where every CI shows a case's output.
            said = check.message if outcome.result != ERRORED else ""
            ET.SubElement(case, "system-out").text = f"{said}\n{outcome.url}".strip() if outcome.run else said
            cases.append(case)
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
        "errors": str(sum(1 for c in cases if c.find("error") is not None)),
        "skipped": str(sum(1 for c in cases if c.find("skipped") is not None)),
        "time": f"{seconds:.3f}",
    }
    suites = ET.Element("testsuites", {"name": "benchweb", **counts})
    now = datetime.now(UTC).replace(microsecond=0).isoformat()
    suite = ET.SubElement(
        suites, "testsuite", {"name": title, **counts, "timestamp": now, "hostname": socket.gethostname()}
    )
    suite.extend(cases)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _gist(outcome: Outcome) -> str:
    """The table's short reason: what failed or went wrong in full, else how the gates went."""
    if outcome.result != "PASS" or not outcome.checks:
        return outcome.reason
    tally = {status: sum(1 for c in outcome.checks if c.status == status) for status in (gates.PASS, gates.SKIP)}
    said = ", ".join(f"{n} {'passed' if status == gates.PASS else 'skipped'}" for status, n in tally.items() if n)
    return f"{len(outcome.checks)} gate{'s' * (len(outcome.checks) != 1)}: {said}"


def markdown(outcomes: list[Outcome], title: str) -> str:
    tally = {r: sum(1 for o in outcomes if o.result == r) for r in ICONS}
    said = ", ".join(f"{n} {r}" for r, n in tally.items() if n)
    lines = [f"### benchweb: {title}", "", f"{len(outcomes)} disk{'s' * (len(outcomes) != 1)}: {said}.", "",
             "| Disk | Result | Run | IOPS | p99 | Why |", "|---|---|---|--:|--:|---|"]  # fmt: skip
    for o in outcomes:
        run = o.run or {}
        link = f"[run{NBSP}{run['id']}]({o.url})" if run else "—"
        iops, p99 = gates.total_iops(run), gates.latency_us(run, "p99")
        lines.append(
            f"| {_cell(o.disk)} | {ICONS[o.result]} | {link} | {gates.iops_text(iops) if iops is not None else '—'} "
            f"| {gates.latency_text(p99).replace(' ', NBSP) if p99 is not None else '—'} | {_cell(_gist(o))} |"
        )
    gated = [o for o in outcomes if o.checks and o.result != ERRORED]
    if gated:
        lines += ["", "<details><summary>Every gate</summary>", "", "| Disk | Gate | Result | Figure |",
                  "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {_cell(o.disk)} | `{_cell(c.gate)}` | {c.status.upper()} | {_cell(c.message)} |"
                  for o in gated for c in o.checks]  # fmt: skip
        lines += ["", "</details>"]
    if any(o.result == FAILED for o in outcomes):
        lines += ["", "A FAIL is a gate the run did not meet; the run page has the whole result."]
    return "\n".join(lines) + "\n"


def as_json(outcomes: list[Outcome], title: str) -> dict[str, Any]:
    return {"title": title, "exit_status": exit_status(outcomes), "disks": [o.as_json() for o in outcomes]}


def json_text(outcomes: list[Outcome], title: str) -> str:
    return json.dumps(as_json(outcomes, title), indent=2, ensure_ascii=False) + "\n"
