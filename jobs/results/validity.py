"""Is a run's number worth comparing? Its stamps in short words, for the disk charts and Compare: steady state,
burst credits (from the disk's replay, jobs/results/burst.py) and the warnings the run carries.

The disk chart's series never read the runs table (jobs/results/series.py): they carry each point's steady
flag and warning count from the result rows, and the disk page brings the rest (chart_marks) with it, as it
brings the environment marks."""

from __future__ import annotations

import re
from typing import Any

from jobs.analysis import steady, verdicts
from jobs.limits.burst import Bucket, Passage
from jobs.models import Disk, Run, RunResult
from jobs.results import burst

STEADY_WORDS = {steady.STEADY: "steady", steady.NOT_STEADY: "not steady", steady.NOT_CHECKED: "not checked"}

# The runs with warnings whose words the disk page brings for the chart's tooltips, newest first; an older one
# says how many it has and that its page tells them.
WARNED_RUNS = 500

# A warning's head: its words up to the first colon, full stop or semicolon, at most this long.
HEAD_CHARS = 80


def steady_words(stamp: dict[str, Any] | None) -> str:
    """'steady', 'not steady' or 'not checked' (a run stored before benchweb stamped steady state too)."""
    return STEADY_WORDS.get((stamp or {}).get("state", ""), "not checked")


def warning_head(warning: str) -> str:
    """The few words that say what a warning is about ("Fresh blocks", "rq_affinity of nvme0n1 is 1, not 2 …")."""
    head = re.split(r":\s|\.\s|;\s", warning.strip(), maxsplit=1)[0].rstrip(".")
    return head if len(head) <= HEAD_CHARS else head[: HEAD_CHARS - 1].rstrip() + "…"


def burst_words(facts: dict[str, Any] | None) -> str:
    """A run's burst facts (run_burst's keys) in words: 'served from burst (balance at start 1.2M credits,
    23 %)', 'partly from burst (…)', 'baseline', or '' when the disk has no bucket or the run was not counted."""
    if not facts or not facts["label"]:
        return ""
    if facts["label"] == "baseline":
        return str(facts["label_text"])
    balance = f"{facts['start_balance_text']}, {facts['start_percent']:.0f} %"
    return f"{facts['label_text']} (balance at start {balance})"


def passage_facts(passage: Passage, bucket: Bucket) -> dict[str, Any]:
    """The keys of burst.run_burst that a replayed passage gives without reading the run."""
    return {
        "label": passage.label,
        "label_text": passage.label_text,
        "start_balance_text": bucket.amount_text(passage.start_balance),
        "start_percent": round(bucket.percent(passage.start_balance), 1),
        "limit_applied": burst.applied_limit(passage),
    }


def chart_marks(disk: Disk, credits: burst.DiskBurst) -> dict[str, Any]:
    """What the disk page passes its IOPS chart (json_script): {"burst": {run id: words} for the runs burst
    served (fully or partly), "warnings": {run id: [heads]} for the latest WARNED_RUNS runs with warnings,
    "verdicts": {run id: [labels]} for the latest WARNED_RUNS runs with a verdict against their number}."""
    bucket = credits.bucket
    served = {
        str(p.run_id): burst_words(passage_facts(p, bucket))
        for p in credits.passages
        if bucket and p.label in ("burst", "partly")
    }
    warned = (
        Run.objects.filter(disk=disk, result__warning_count__gt=0)
        .order_by("-finished_at", "-pk")
        .values_list("pk", "warnings")[:WARNED_RUNS]
    )
    heads = {str(pk): [warning_head(warning) for warning in warnings or []] for pk, warnings in warned}
    judged = (
        RunResult.objects.filter(disk=disk, measured_disk=False)
        .order_by("-finished_at", "-run_id")
        .values_list("run_id", "verdict_kinds")[:WARNED_RUNS]
    )
    verdicts_of = {str(pk): [verdicts.label(kind) for kind in kinds.split(",") if kind] for pk, kinds in judged}
    return {"burst": served, "warnings": heads, "verdicts": verdicts_of}


class BurstCache:
    """Each disk's replay once, for a page that shows several runs of it (Compare): a run's passage, or its own
    replay when the disk's is too short to reach it (over burst.MAX_RUNS runs back)."""

    def __init__(self) -> None:
        self._disks: dict[int, burst.DiskBurst] = {}

    def of(self, run: Run) -> dict[str, Any] | None:
        """burst.run_burst's facts for a succeeded run (None: no bucket), from the disk's replay where it can."""
        if run.disk_id not in self._disks:
            self._disks[run.disk_id] = burst.disk_burst(run.disk)
        history = self._disks[run.disk_id]
        if history.bucket is None:
            return None
        passage = history.passage(run.pk)
        return passage_facts(passage, history.bucket) if passage else burst.run_burst(run)
