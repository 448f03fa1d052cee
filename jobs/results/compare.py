"""Comparing runs or disks side by side: what the Compare page (jobs/results/pages.py), its printable report and a
share link of a comparison show."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any

from django.db.models import (
    F,
    Window,
)
from django.db.models.functions import RowNumber
from django.http import Http404, QueryDict
from django.urls import reverse
from django.utils import timezone

from jobs import clock, environment, limits, units
from jobs.analysis import steady
from jobs.models import Disk, Run, Team
from jobs.results import stats, validity
from jobs.tools.summary import PERCENTILES

COMPARE_MIN, COMPARE_MAX = stats.COMPARE_MIN, stats.COMPARE_MAX


def theoretical_at_block_size(snapshot: dict[str, Any] | None) -> str:
    """The disk's limit at the run's block size with the binding cap named, in the source's throughput unit:
    '600 IOPS (IOPS cap binds at 4 KiB) = 2.458 MB/s'."""
    if not snapshot or snapshot.get("error"):
        return units.DASH
    unit = snapshot.get("total_throughput_unit") or snapshot.get("throughput_unit") or "MB/s"
    block, binding = snapshot.get("block_size_bytes"), snapshot.get("binding")
    iops, moved = snapshot.get("effective_iops"), snapshot.get("effective_throughput_bytes_per_s")
    if not block or binding is None or iops is None:
        # No block size to bind at: the limit itself.
        return limits.rate_text(snapshot.get("throughput_bytes_per_s"), unit)
    at = units.format_bytes(block)
    if binding == "throughput":
        return f"{limits.rate_text(moved, unit)} (throughput cap binds at {at}) = {limits.number(iops, 1)} IOPS"
    return f"{limits.number(iops, 1)} IOPS (IOPS cap binds at {at}) = {limits.rate_text(moved, unit)}"


class Styled(str):
    """A table cell's text with the CSS class the page gives it (eff-above for an efficiency above the promise)
    and a note printed small under it (the flag's words)."""

    css: str
    note: str

    def __new__(cls, text: str, css: str, note: str = "") -> Styled:
        cell = super().__new__(cls, text)
        cell.css, cell.note = css, note
        return cell


@dataclass
class Column:
    label: str
    detail: str
    url: str
    run: Run | None
    # The run's burst facts (validity.BurstCache.of): None where its disk has no credit bucket.
    credits: dict[str, Any] | None = field(default=None)

    @property
    def summary(self) -> dict[str, Any]:
        return (self.run.summary or {}) if self.run else {}

    @property
    def measured(self) -> float | None:
        return (self.summary.get("total") or {}).get("iops")

    @property
    def theoretical(self) -> float | None:
        return limits.promised_iops(self.run.limits_snapshot) if self.run else None

    @property
    def burst(self) -> float | None:
        return limits.promised_iops(self.run.limits_snapshot, burst=True) if self.run else None

    @property
    def efficiency(self) -> limits.Efficiency | None:
        return limits.Efficiency.of(self.measured, self.theoretical, self.burst)

    def efficiency_text(self) -> str:
        found = self.efficiency
        if found is None:
            return units.DASH
        return Styled(found.text, f"wrap {found.css}".strip(), found.flag)

    def throughput_efficiency_text(self, snapshot: dict[str, Any], measured: float | None) -> str:
        found = limits.throughput_efficiency(measured, snapshot)
        if found is None:
            return units.DASH
        return Styled(limits.throughput_efficiency_text(found, snapshot), f"wrap {found.flag_css}".strip(), found.flag)

    def cells(self) -> list[str]:
        summary, snapshot = self.summary, (self.run.limits_snapshot or {}) if self.run else {}
        total = summary.get("total") or {}
        bandwidth = total.get("bw_bytes_per_s")
        cells = [
            clock.show(self.run.finished_at, timezone.get_current_timezone(), clock.MINUTES)
            if self.run and self.run.finished_at
            else "—",
            units.format_iops(self.measured),
            units.format_iops_exact(self.theoretical),
            self.efficiency_text(),
            self.throughput_efficiency_text(snapshot, bandwidth),
            limits.beside(units.format_bytes_per_s(bandwidth), bandwidth, limits.limit_unit(snapshot)),
            Styled(theoretical_at_block_size(snapshot), "wrap"),
            *self.stamp_cells(),
        ]
        for direction in ("read", "write"):
            clat = (summary.get(direction) or {}).get("clat_us") or {}
            cells += [units.format_micros(clat.get(key)) for key, _ in PERCENTILES]
        return cells

    def stamp_cells(self) -> list[str]:
        """Steady state, burst and warnings: whether the run's numbers are worth comparing."""
        if self.run is None:
            return [units.DASH] * 3
        stamp = self.run.steady_state
        cells = [Styled(validity.steady_words(stamp), "wrap", steady.describe(stamp)), self.burst_cell()]
        warnings = self.run.warnings or []
        heads = "; ".join(validity.warning_head(w) for w in warnings)
        count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "none"
        return [*cells, Styled(count, "wrap", heads)]

    def burst_cell(self) -> str:
        facts = self.credits
        if not facts:
            return units.DASH
        if not facts["label"]:
            return Styled(facts["label_text"], "wrap")
        applied = facts["limit_applied"]
        note = f"balance at start {facts['start_balance_text']} ({facts['start_percent']:g} %)"
        return Styled(facts["label_text"], "wrap", f"{note}; judged against the {applied} limit")


# The rows up to the steady state are always shown; the rest where some column has a figure.
ALWAYS_SHOWN = 8


ROW_LABELS = [
    "Finished",
    "Measured IOPS",
    "Theoretical IOPS",
    "Efficiency",
    "Throughput efficiency",
    "Bandwidth",
    "Theoretical at its block size",
    "Steady state",
    "Burst credits",
    "Warnings",
    *[f"{d} p{percent:g}" for d in ("read", "write") for _, percent in PERCENTILES],
]


@dataclass
class Group:
    title: str
    columns: list[Column]

    def rows(self) -> list[tuple[str, list[str]]]:
        cells = [column.cells() for column in self.columns]
        rows = [(label, [c[i] for c in cells]) for i, label in enumerate(ROW_LABELS)]
        # Latency rows no column has (ndisk64 reports none; a read profile has no write side) and the burst row
        # where no disk has a credit bucket are left out.
        return [row for i, row in enumerate(rows) if i < ALWAYS_SHOWN or any(cell != units.DASH for cell in row[1])]


def _disk_groups(disks: list[Disk]) -> list[Group]:
    latest = (
        Run.objects.filter(disk__in=disks, state=Run.State.SUCCEEDED)
        .annotate(
            rank=Window(RowNumber(), partition_by=[F("disk_id"), F("profile_name")], order_by=F("finished_at").desc())
        )
        .filter(rank=1)
        .defer(*Run.BULKY_FIELDS)
    )
    by_pair = {(run.disk_id, run.profile_name): run for run in latest}
    profiles = sorted({name for _, name in by_pair})
    return [
        Group(
            name,
            [
                Column(disk.label, disk.host.name, reverse("disk_detail", args=[disk.pk]), by_pair.get((disk.pk, name)))
                for disk in disks
            ],
        )
        for name in profiles
    ]


def _run_column(run: Run) -> Column:
    return Column(f"#{run.pk}", f"{run.profile_name} · {run.disk}", reverse("run_detail", args=[run.pk]), run)


def _chart(groups: list[Group], by_disk: bool) -> dict[str, Any]:
    if not by_disk:
        columns = groups[0].columns if groups else []
        run_labels = []
        for c in columns:
            assert c.run is not None  # a column of the runs compared has its run
            run_labels.append([c.label, c.run.profile_name[:28]])
        return {
            "labels": run_labels,
            "datasets": [
                {"label": "measured", "kind": "measured", "series": 0, "data": [c.measured for c in columns]},
                {
                    "label": "theoretical",
                    "kind": "theoretical",
                    "series": 0,
                    "data": [c.theoretical for c in columns],
                    "burst": [c.burst for c in columns],
                },
            ],
        }
    labels = [g.title for g in groups]
    datasets = []
    for i, column in enumerate(groups[0].columns if groups else []):
        for kind in ("measured", "theoretical"):
            data = [getattr(g.columns[i], kind) for g in groups]
            label = f"{column.detail}:{column.label} {kind}"
            dataset = {"label": label, "kind": kind, "series": i, "data": data}
            if kind == "theoretical":
                dataset["burst"] = [g.columns[i].burst for g in groups]
            datasets.append(dataset)
    return {"labels": labels, "datasets": datasets}


def _environment_changes(groups: list[Group]) -> list[tuple[Column, Column, list[str]]]:
    """For runs compared, what differs between each run's environment and the next one's, older to newer
    whatever the order picked: (column, next column, lines), or (column, next column, []) where nothing recorded
    differs."""
    columns = sorted((c for c in (groups[0].columns if groups else []) if c.run is not None), key=_ran_at)
    found = []
    for before, after in pairwise(columns):
        assert before.run is not None and after.run is not None  # filtered above
        lines = environment.environment_changes(before.run.environment, after.run.environment)
        if not (before.run.environment and after.run.environment):
            lines = ["not comparable: the environment of one of them was not recorded"]
        found.append((before, after, lines))
    return found


def _ran_at(column: Column) -> tuple[datetime, int]:
    """When the column's run ran (its finish; its creation for one that never finished), then its id."""
    run = column.run
    assert run is not None  # the caller keeps columns with a run
    return (run.finished_at or run.created_at, run.pk)


def _add_credits(groups: list[Group]) -> None:
    """Each column's burst facts, from one replay per disk."""
    cache = validity.BurstCache()
    for column in (c for group in groups for c in group.columns if c.run is not None):
        assert column.run is not None  # filtered above
        column.credits = cache.of(column.run)


def chosen(team: Team, params: QueryDict) -> dict[str, Any]:
    """What the Compare page shows for its query (?disks= or ?runs=, and the Statistics card's), with the choices
    around it: also the printable report's (jobs/exports/pages.py). Http404 for ids that are not numbers."""
    disk_ids, run_ids = _ids(params, "disks"), _ids(params, "runs")
    context = {
        **comparison(team, disk_ids, run_ids, params),
        "chosen_disks": set(disk_ids),
        "chosen_runs": set(run_ids),
        "disks": Disk.objects.filter(team=team).select_related("host"),
        "runs": Run.objects.filter(team=team, state=Run.State.SUCCEEDED)
        .select_related("disk__host")
        .defer(*Run.BULKY_FIELDS, "summary", "parameters")
        .order_by("-finished_at")[:50],
    }
    context["distributions_url"] = reverse("compare_distributions") + "?" + context["distributions"]
    return context


def _ids(params: QueryDict, key: str) -> list[int]:
    """?disks=1,2 and ?disks=1&disks=2 alike."""
    parts = [part.strip() for value in params.getlist(key) for part in value.split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise Http404(f"?{key}= takes numbers separated by commas, e.g. ?{key}=3,7.")
    return list(dict.fromkeys(int(part) for part in parts))


def comparison(team: Team, disk_ids: list[int], run_ids: list[int], params: Mapping[str, str]) -> dict[str, Any]:
    """What the Compare page shows of the disks or runs chosen: the groups side by side, the chart, the
    environment, the statistics (the card's choices in `params`). The page and a share link of a comparison
    (jobs/shares/public.py) both draw from this. Http404 when one of them is not the team's."""
    groups: list[Group] = []
    problem = ""
    chosen = disk_ids or run_ids
    if disk_ids and run_ids:
        problem = "Compare disks or runs, not both at once."
    elif chosen and not COMPARE_MIN <= len(chosen) <= COMPARE_MAX:
        problem = f"Pick {COMPARE_MIN} to {COMPARE_MAX}; you picked {len(chosen)}."
    if disk_ids:
        found = {d.pk: d for d in Disk.objects.filter(team=team, pk__in=disk_ids).select_related("host")}
        if len(found) != len(disk_ids):
            raise Http404("No such disk in your team.")
        if not problem:
            groups = _disk_groups([found[pk] for pk in disk_ids])
    elif run_ids:
        picked = Run.objects.filter(team=team, pk__in=run_ids).select_related("disk__host").defer(*Run.BULKY_FIELDS)
        found_runs = {r.pk: r for r in picked}
        if len(found_runs) != len(run_ids):
            raise Http404("No such run in your team.")
        if not problem:
            columns = [_run_column(found_runs[pk]) for pk in run_ids]
            groups = [Group("Selected runs", columns)]
    _add_credits(groups)
    return {
        "groups": groups,
        "problem": problem,
        "by_disk": bool(disk_ids),
        "chart": _chart(groups, bool(disk_ids)),
        "environment_changes": [] if disk_ids else _environment_changes(groups),
        # Statistics and latency distributions (templates/jobs/results/_compare_stats.html).
        "stats": stats.card(params, team, disk_ids),
        "distributions": "runs=" + ",".join(map(str, run_ids)) if run_ids else "disks=" + ",".join(map(str, disk_ids)),
    }
