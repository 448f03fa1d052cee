"""What a disk's page shows without acting: limits, burst credits, compliance and stability, the chart's marks,
changes and the latest runs. The team's disk page (jobs/disks/pages.py) and its share link
(jobs/shares/public.py) both draw from `disk_facts`, so the two show the same disk the same way."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from jobs import environment, limits
from jobs.analysis import verdicts
from jobs.models import Annotation, Disk, RunResult, RunResultDay
from jobs.results import burst, compliance, page_cache, stability, validity


def disk_facts(disk: Disk, params: Any, shared: bool = False) -> dict[str, Any]:
    """What the disk page shows without acting: limits, burst credits, compliance, the chart's marks, changes and
    the latest runs. The disk page and its share link (jobs/shares/public.py, `shared`) both draw from this."""
    disk_limits, limits_error = disk.limits_or_reason()
    runs = list(disk.runs.select_related("profile")[:20])
    credits = burst.disk_burst(disk)
    labels = credits.labels()
    recorded = _recent_environments(disk)
    for run in runs:
        run.burst_label = labels.get(run.pk, "")  # type: ignore[attr-defined]  # shown beside its IOPS
    return {
        "disk": disk,
        "limits": disk_limits,
        "limits_error": limits_error,
        "breakdown": _breakdown(disk_limits),
        "runs": runs,
        "burst": credits,
        "environment_changes": _environment_changes(recorded),
        "device_chain": _device_chain(recorded),
        "measured": measured_disk(disk),
        "chart_marks": validity.chart_marks(disk, credits),
        "change_points": disk.change_points.all()[:10],
        "disk_annotations": Annotation.for_disk(disk).select_related("disk__host", "host")[:10],
        "compliance_html": _compliance_html(disk, params, shared),
    }


def measured_disk(disk: Disk) -> dict[str, Any] | None:
    """How many of the disk's judged runs measured the disk, and the verdicts of the others by kind, most first
    (docs/user-guide/verdicts.md); None when none of its runs was judged."""
    rows = list(RunResult.objects.filter(disk=disk, measured_disk__isnull=False)
                .values_list("measured_disk", "verdict_kinds"))  # fmt: skip
    if not rows:
        return None
    kinds = Counter(kind for measured, found in rows if not measured for kind in found.split(",") if kind)
    return {
        "judged": len(rows),
        "disk": sum(1 for measured, _ in rows if measured),
        "verdicts": [{"label": verdicts.label(kind), "count": count} for kind, count in kinds.most_common()],
    }


# How many of a disk's latest runs its page looks through for changes of environment.
ENVIRONMENT_RUNS = 50
# (run id, environment, finished at) of runs that recorded an environment.
Recorded = list[tuple[int, Any, datetime | None]]


def _recent_environments(disk: Disk) -> Recorded:
    """(run id, environment, finished at) of the disk's last ENVIRONMENT_RUNS runs that recorded one, oldest first."""
    recent = disk.runs.filter(environment__isnull=False).order_by("-created_at", "-pk")
    return list(recent.values_list("pk", "environment", "finished_at")[:ENVIRONMENT_RUNS])[::-1]


def _environment_changes(rows: Recorded) -> list[dict[str, Any]]:
    """Where the environment changed between consecutive runs of the disk (latest first), among `rows`
    (_recent_environments): {before, after (run ids), lines, x (the later run's finish, ms since the epoch, where
    the IOPS chart marks it; None while it runs)}. The chart's own series never read the runs table
    (jobs/results/series.py), so the marks come with the page."""
    finished = {pk: at for pk, _env, at in rows}
    marks = [
        {"before": before, "after": after, "lines": lines, "x": _epoch_ms(finished[after])}
        for before, after, lines in environment.consecutive_changes([(pk, env) for pk, env, _at in rows])
    ]
    return marks[::-1]


def _device_chain(rows: Recorded) -> dict[str, Any] | None:
    """The devices under the disk's target as the latest run's probe found them ({text, run}), the one place the
    page names them; None when that run's probe did not read them (a run recorded before it did, a directory on a
    filesystem without a block device)."""
    if not rows:
        return None
    run_id, env, _finished = rows[-1]
    text = environment.chain_of(env).get("text")
    return {"text": text, "run": run_id} if text else None


def _epoch_ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


def _compliance_html(disk: Disk, params: Any, shared: bool) -> str:
    """The Compliance and Stability cards, kept between results (jobs/results/page_cache.py). They are drawn from
    the disk's results and, for the drops shared with its site, those of the site's disks."""
    site = disk.host.site
    disks = Disk.objects.filter(team_id=disk.team_id, host__site=site) if site else Disk.objects.filter(pk=disk.pk)
    drawn = list(disks.select_related("host").order_by("pk"))
    query = sorted((key, params.get(key, "")) for key in params)
    stamp = (disk.pk, shared, query, page_cache.disks_stamp(drawn),
             page_cache.results_stamp(RunResult.objects.filter(disk__in=drawn)))  # fmt: skip

    def draw() -> str:
        context = _compliance(disk, params) | {"disk": disk, "share_link": shared}
        return render_to_string("jobs/disks/_compliance.html", context)

    return page_cache.kept("disk-compliance", stamp, draw)


def _compliance(disk: Disk, params: Any) -> dict[str, Any]:
    """The Compliance and Stability cards: the period, profile and tolerance asked in the page's query string,
    or the refusal naming the one to fix (the cards then show their form only)."""
    profiles = RunResultDay.objects.filter(disk=disk).values_list("profile_name", flat=True).distinct()
    params = _compliance_params(params)
    form = {
        "compliance_profiles": sorted({name for name in profiles if name}),
        "compliance_query": params,
        "compliance_periods": COMPLIANCE_PERIODS,
        # What the Period field shows: the period counted, the default when none was asked (never the first option).
        "compliance_period": params.get("period") or ("custom" if _custom(params) else compliance.DEFAULT_PERIOD),
    }
    try:
        query = compliance.parse(params)
    except compliance.BadRequest as exc:
        return form | {"compliance_error": str(exc)}
    found = compliance.disk_compliance(disk, query)
    streak = found["longest_streak"]
    streak["first"], streak["last"] = _moment(streak["from"]), _moment(streak["to"])
    zone = timezone.get_current_timezone()
    compliance.worst_hour_here(found, zone, timezone.now())
    drops = stability.shared_drops(disk, query)
    for group in drops["groups"]:
        for drop in group["drops"]:
            drop["finished"] = _moment(drop["finished_at"])
    heatmap = stability.heatmap(disk, query, zone)
    metrics = [{"key": "iops", "caption": "Median IOPS"}, {"key": "p99", "caption": "Median p99 latency"}]
    return form | {
        "compliance": found,
        "heatmap": heatmap if heatmap["runs"] else None,
        "heatmap_metrics": metrics,
        "hours": range(24),
        "shared_drops": drops,
    }


COMPLIANCE_PERIODS = [("7d", "Last 7 days"), ("30d", "Last 30 days"), ("90d", "Last 90 days"), ("all", "All time")]


def _custom(params: Any) -> bool:
    return bool(params.get("since", "").strip() or params.get("until", "").strip())


def _compliance_params(params: Any) -> dict[str, str]:
    """The card's form sends the period chosen in its Period field, and since/until when the address gave them
    (the field then shows them as its 'custom' choice): a named period chosen there replaces them."""
    keys = ("period", "since", "until", "profile", "tolerance", "measured")
    asked = {key: params.get(key, "") for key in keys if key in params}
    if asked.get("period") == "custom":
        del asked["period"]
    elif asked.get("period") in compliance.PERIODS:
        asked.pop("since", None)
        asked.pop("until", None)
    return asked


def _moment(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso) if iso else None


def _breakdown(found: limits.Limits | None) -> dict[str, Any] | None:
    """How the limits follow from the spec; None where there are none (a custom spec without values)."""
    if found is None or (found.iops is None and found.throughput_bytes_per_s is None):
        return None
    return limits.breakdown(found)
