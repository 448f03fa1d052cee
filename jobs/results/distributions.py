"""Completion-latency distributions of chosen runs, or of chosen disks, side by side: the Compare page's CDF
and histogram overlays and GET /api/v1/distributions/.

A run's CDF is what the tool printed: its clat percentiles (p50 … p99.9) and its max as 100 %, one point each;
nothing is drawn between them that the tool did not report. A run imported from fio's json+ output also has
its latency bins: its CDF is then every bin's cumulative share, and the histogram overlay shares one set of
log-spaced edges across all the runs drawn, so the bars line up.

A disk's distribution is its latest successful run of the profile, the run the Compare table shows for it:
percentiles of several runs cannot be pooled honestly (only bins could), so a disk is never drawn as a blend."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jobs import timeseries
from jobs.models import Disk, Run, Team
from jobs.results.stats import StatsError, choose_profile
from jobs.timeseries import DIRECTIONS
from jobs.tools.summary import PERCENTILES

HISTOGRAM_BINS = 40
MAX_CHOSEN = 8


def for_runs(runs: list[Run]) -> dict[str, Any]:
    """Every direction each run measured, in the order given."""
    return _answer([(f"#{run.pk}", run) for run in runs], "each run as measured")


def for_disks(disks: list[Disk], profile: str) -> dict[str, Any]:
    """Each disk's latest successful run of `profile` (a disk without one is left out, and listed)."""
    chosen, missing = [], []
    for disk in disks:
        run = (
            Run.objects.filter(disk=disk, profile_name=profile, state=Run.State.SUCCEEDED)
            .defer(*Run.BULKY_FIELDS)
            .order_by("-finished_at")
            .first()
        )
        if run is None:
            missing.append(disk.pk)
        else:
            chosen.append((f"{disk.label} #{run.pk}", run))
    answer = _answer(chosen, f"each disk's latest successful run of {profile!r}")
    return answer | {"profile": profile, "disks_without_runs": missing}


def _answer(labelled: list[tuple[str, Run]], what: str) -> dict[str, Any]:
    series = [_series(label, run, d) for label, run in labelled for d in DIRECTIONS]
    drawn = [s for s in series if s is not None]
    edges = _shared_edges([s["bins"] for s in drawn])
    for found in drawn:
        bins = found.pop("bins")
        found["histogram"] = _histogram(bins, edges) if edges else None
    return {"what": what, "edges_us": [_us(edge) for edge in edges] if edges else None, "series": drawn}


def _series(label: str, run: Run, direction: str) -> dict[str, Any] | None:
    summary = run.summary if isinstance(run.summary, dict) else {}
    clat = (summary.get(direction) or {}).get("clat_us") or {}
    bins = _bins(summary, direction)
    cdf = _cdf_from_bins(bins) if bins else _cdf_from_percentiles(clat)
    if not cdf:
        return None
    return {
        "label": f"{label} {direction}",
        "run": run.pk,
        "disk": run.disk_id,
        "profile": run.profile_name,
        "direction": direction,
        "finished_at": run.finished_at,
        "source": "bins" if bins else "percentiles",
        "percentiles_us": {key: clat.get(key) for key, _ in PERCENTILES} | {"max": clat.get("max")},
        "cdf": cdf,
        "bins": bins,
    }


def _cdf_from_percentiles(clat: dict[str, Any]) -> list[dict[str, float]]:
    points = [(clat.get(key), percent) for key, percent in PERCENTILES] + [(clat.get("max"), 100.0)]
    kept = [(float(v), p) for v, p in points if isinstance(v, int | float) and math.isfinite(v) and v > 0]
    return [{"latency_us": v, "percent": p} for v, p in kept]


def _cdf_from_bins(bins: dict[float, int]) -> list[dict[str, float]]:
    total, seen, points = sum(bins.values()), 0, []
    for ns in sorted(bins):
        seen += bins[ns]
        points.append({"latency_us": _us(ns), "percent": round(100 * seen / total, 4)})
    return points


def _bins(summary: dict[str, Any], direction: str) -> dict[float, int]:
    """The json+ bins of one direction ({ns: count}, counts > 0), or {} when the run has none."""
    every = summary.get("latency_bins_ns")
    raw = every.get(direction) if isinstance(every, dict) else None
    if not isinstance(raw, dict):
        return {}
    found: dict[float, int] = {}
    for ns, n in raw.items():
        try:
            value, count = float(ns), int(n)
        except (TypeError, ValueError):
            continue  # the parser stores only numbers; a hand-edited summary is drawn without the stray key
        if math.isfinite(value) and value > 0 and count > 0:
            found[value] = count
    return found


def _shared_edges(all_bins: list[dict[float, int]]) -> list[float]:
    values = [ns for bins in all_bins for ns in bins]
    return timeseries.log_edges(min(values), max(values), HISTOGRAM_BINS) if values else []


def _histogram(bins: dict[float, int], edges: list[float]) -> dict[str, Any] | None:
    if not bins:
        return None
    counts = timeseries.histogram(bins, edges)
    total = sum(counts)
    return {"total": total, "counts": counts, "percent": [round(100 * n / total, 3) for n in counts]}


def _us(ns: float) -> float:
    return float(f"{ns / 1000:.5g}")


def answer(params: Mapping[str, str], team: Team) -> dict[str, Any]:
    """The distributions for ?runs=1,2 or ?disks=1,2 (&profile=<name>) of the team; StatsError names the bad one."""
    runs, disks = _ids(params, "runs"), _ids(params, "disks")
    if bool(runs) == bool(disks):
        raise StatsError("runs", f"Give runs=<ids> or disks=<ids> (1 to {MAX_CHOSEN}, separated by commas).")
    if runs:
        found = {r.pk: r for r in Run.objects.filter(team=team, pk__in=runs).defer(*Run.BULKY_FIELDS)}
        if len(found) != len(runs):
            raise StatsError("runs", f"No run {min(set(runs) - set(found))} in your team.")
        return for_runs([found[pk] for pk in runs])
    chosen = {d.pk: d for d in Disk.objects.filter(team=team, pk__in=disks)}
    if len(chosen) != len(disks):
        raise StatsError("disks", f"No disk {min(set(disks) - set(chosen))} in your team.")
    picked = [chosen[pk] for pk in disks]
    return for_disks(picked, choose_profile(picked, params.get("profile") or ""))


def _ids(params: Mapping[str, str], field: str) -> list[int]:
    parts = [part.strip() for part in (params.get(field) or "").split(",") if part.strip()]
    if not all(part.isascii() and part.isdigit() and int(part) <= 2**63 - 1 for part in parts):
        raise StatsError(field, f"{field} takes ids separated by commas, such as {field}=3,7.")
    ids = list(dict.fromkeys(int(part) for part in parts))
    if len(ids) > MAX_CHOSEN:
        raise StatsError(field, f"At most {MAX_CHOSEN} {field} at once; you gave {len(ids)}.")
    return ids
