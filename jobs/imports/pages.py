"""Importing results people ran by hand: paste or upload fio/ndisk64 output, check the numbers, pick, save."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from jobs import access, errors, figures, limits, units
from jobs.imports import groups, importing, sweeps
from jobs.imports.forms import (
    MAX_IMPORT_CHARS,
    GroupImportForm,
    GroupTargetForm,
    ImportForm,
    ImportTargetForm,
    SweepImportForm,
    normalise_newlines,
)
from jobs.models import Disk, Run
from jobs.tools import sweep_plan
from jobs.tools.summary import PERCENTILES, ParseError, ParseResult


@dataclass
class Result:
    """One result of a source, as the confirmation shows it."""

    pick: str  # "<source index>:<label>", the value of its checkbox
    label: str
    partial: str
    format: str
    summary: dict[str, Any]
    series: str
    by_workload: bool = True  # the series is named by the workload the output states, not by its source
    joins: str = ""  # the profile whose series it joins: its runs on this disk measured the same workload
    job_errors: str = ""
    theoretical: float | None = None
    burst: float | None = None
    duplicate: Run | None = None
    ticked: bool = True
    figures: list[dict[str, Any]] = field(default_factory=list)
    workload: list[tuple[str, str]] = field(default_factory=list)
    runtime: str = ""
    latency: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def efficiency(self) -> limits.Efficiency | None:
        return limits.Efficiency.of((self.summary.get("total") or {}).get("iops"), self.theoretical, self.burst)


@dataclass
class Parsed:
    """One pasted text or uploaded file: its results, or why it cannot be read."""

    name: str
    text: str
    error: str = ""
    results: list[Result] = field(default_factory=list)

    @property
    def clients(self) -> int:
        """How many clients of a fio --client run it holds (0: none), which the confirmation offers to import as a
        group instead."""
        return sum(result.label.startswith("client ") for result in self.results)


def _parse_sources(
    sources: list[tuple[str, str]], disk: Disk | None, tool: str, picks: set[str] | None = None
) -> list[Parsed]:
    """Each source's results; a result is ticked when it is new on the disk and picked (None: all are)."""
    out = []
    for index, (name, text) in enumerate(sources):
        try:
            results = importing.parse_results(text, tool)
        except ParseError as exc:
            out.append(Parsed(name, text, error=str(exc)))
            continue
        items = [_result(index, name, text, r, disk) for r in results]
        for item in items:
            item.ticked = not item.duplicate and (picks is None or item.pick in picks)
        out.append(Parsed(name, text, results=items))
    return out


def _result(index: int, name: str, text: str, parsed: ParseResult, disk: Disk | None) -> Result:
    summary = parsed.summary
    snapshot = disk.limits_snapshot(summary.get("block_size_bytes")) if disk else None
    errors = "; ".join(
        f"job {e['job']} error {e['errno']}" + (f" ({e['message']})" if e.get("message") else "")
        for e in parsed.job_errors
    )
    joined = importing.same_workload_profile(disk, parsed) if disk else None
    return Result(
        pick=f"{index}:{parsed.label}",
        label=parsed.label,
        partial=parsed.partial,
        format=parsed.format,
        summary=summary,
        series=joined.name if joined else importing.series_name(parsed, name),
        joins=joined.name if joined else "",
        by_workload=bool(figures.workload_name(summary.get("workload"), summary.get("block_size_bytes"))),
        job_errors=errors,
        theoretical=limits.promised_iops(snapshot),
        burst=limits.promised_iops(snapshot, burst=True),
        duplicate=importing.duplicate_of(disk, text, parsed.label) if disk else None,
        figures=figures.result_figures(summary),
        workload=figures.workload_facts(summary),
        runtime=figures.printed_runtime(summary),
        latency=_latency_rows(summary),
    )


def _latency_rows(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    keys = [("mean", "mean"), *[(key, f"p{percent:g}") for key, percent in PERCENTILES], ("max", "max")]
    read, write = (summary.get(d) or {} for d in ("read", "write"))
    rows = [
        (
            label,
            units.format_micros((read.get("clat_us") or {}).get(key)),
            units.format_micros((write.get("clat_us") or {}).get(key)),
        )
        for key, label in keys
    ]
    # An excerpt or an ndisk64 report has no latency at all: say so rather than draw a table of dashes.
    return rows if any(cell != units.DASH for row in rows for cell in row[1:]) else []


@login_required
def import_results(request: HttpRequest) -> HttpResponse:
    """Step 1 parses and shows the numbers without storing; step 2 stores exactly the text that was shown, and
    of it the results ticked ("pick": "<source index>:<label>"), each refused if already stored on the disk."""
    team = access.team(request)
    parsed: list[Parsed] = []
    save_errors: list[str] = []
    blocked = False  # the disk, date or text is wrong: the confirmation cannot be saved as it stands
    confirm: Any = {}
    disk = None
    if request.method == "POST" and request.POST.get("step") == "save":
        access.require_change(request, team)
        target = ImportTargetForm(request.POST, team=team)
        names, texts = request.POST.getlist("source_name"), request.POST.getlist("source_text")
        sources = [(name[:200], normalise_newlines(text)) for name, text in zip(names, texts, strict=False)]
        if not sources or sum(len(text) for _, text in sources) > MAX_IMPORT_CHARS:
            save_errors.append("The output to save is missing or too large: choose the files again.")
        valid = target.is_valid()
        save_errors += [
            f"{target.fields[name].label if name in target.fields else ''}: {' '.join(str(e) for e in errs)}"
            for name, errs in target.errors.items()
        ]
        disk = target.cleaned_data["disk"] if valid else None
        picks = set(request.POST.getlist("pick"))
        parsed = _parse_sources(sources, disk, request.POST.get("tool", ""), picks)
        blocked = bool(save_errors)
        if not save_errors and not any(p.error for p in parsed):
            save_errors += _pick_problems(parsed, picks)
        if not save_errors and not any(p.error for p in parsed):
            try:
                return _save_imports(request, parsed, picks, target.cleaned_data)
            except importing.DuplicateImport as exc:  # saved meanwhile, from another tab or request
                save_errors.append(str(exc))
                parsed = _parse_sources(sources, disk, request.POST.get("tool", ""), picks)
        confirm = request.POST
        form = ImportForm(team=team, initial={name: request.POST.get(name) for name in ("disk", "finished_at", "tool")})
    elif request.method == "POST":
        access.require_change(request, team)
        form = ImportForm(request.POST, request.FILES, team=team)
        if form.is_valid():
            data, disk = form.cleaned_data, form.cleaned_data["disk"]
            parsed = _parse_sources(data["sources"], disk, data["tool"])
            confirm = request.POST
    else:
        form = ImportForm(team=team, initial={"disk": request.GET.get("disk")})
    results = [result for p in parsed for result in p.results]
    context = {
        "form": form,
        "parsed": parsed,
        # A duplicate or no tick does not block: the results left ticked can be saved from the same page.
        "ready": bool(parsed)
        and not blocked
        and not any(p.error for p in parsed)
        and any(not r.duplicate for r in results),
        "choosing": any(len(p.results) > 1 for p in parsed),
        "unreadable": any(p.error for p in parsed),
        "new_results": sum(1 for r in results if not r.duplicate),
        "save_errors": save_errors,
        "disk": disk,
        "confirm": {name: confirm.get(name, "") for name in ("disk", "finished_at", "tool")},
        "can_change": access.can_change(request, team),
        "max_chars": MAX_IMPORT_CHARS,
    }
    return render(request, "jobs/imports/import.html", context)


def _pick_problems(parsed: list[Parsed], picks: set[str]) -> list[str]:
    """Why the ticked results cannot be saved: none ticked, or one already stored (Back, then Save again)."""
    chosen = [result for p in parsed for result in p.results if result.pick in picks]
    if not chosen:
        return ["Nothing was saved: tick at least one result to save."]
    return [
        f"Nothing was saved: {result.series} is already stored on this disk as run {result.duplicate.pk} "
        "(linked below); untick it or import another output."
        for result in chosen
        if result.duplicate
    ]


def _save_imports(request: HttpRequest, parsed: list[Parsed], picks: set[str], data: dict[str, Any]) -> HttpResponse:
    disk = data["disk"]
    with transaction.atomic():
        runs = [
            run
            for p in parsed
            if (labels := [result.label for result in p.results if result.pick in picks])
            for run in importing.import_results(
                disk, p.text, name=p.name, at=data["finished_at"], user=request.user, tool=data["tool"], labels=labels
            )
        ]
    named = ", ".join(dict.fromkeys(run.profile_name for run in runs))
    messages.success(request, f"Imported {len(runs)} result{'s' if len(runs) != 1 else ''} onto {disk}: {named}.")
    return redirect("run_detail", pk=runs[0].pk) if len(runs) == 1 else redirect("disk_detail", pk=disk.pk)


@dataclass
class PlannedPoint:
    """One point of a sweep to import, as the check shows it."""

    point: str
    output: str
    iops: str


def _planned(sweep: sweeps.Sweep) -> dict[str, Any]:
    rows = [
        PlannedPoint(
            sweep_plan.point_text(point, sweep.tool),
            output.called,
            units.format_iops((output.result.summary.get("total") or {}).get("iops")),
        )
        for point, output in zip(sweep.plan.points, sweep.outputs, strict=True)
    ]
    return {"name": sweep.name, "count": sweep.plan.count, "rows": rows}


@login_required
def import_sweep(request: HttpRequest) -> HttpResponse:
    """Step 1 reads every output and shows the sweeps they make (or why they make none), storing nothing; step 2
    stores exactly the outputs shown, all of them or none (jobs/imports/sweeps.py)."""
    team = access.team(request)
    planned: list[sweeps.Sweep] = []
    refusal = ""
    sources: list[tuple[str, str]] = []
    confirm: dict[str, str] = {}
    if request.method == "POST" and request.POST.get("step") == "save":
        access.require_change(request, team)
        target = ImportTargetForm(request.POST, team=team)
        names, texts = request.POST.getlist("source_name"), request.POST.getlist("source_text")
        sources = [(name[:200], normalise_newlines(text)) for name, text in zip(names, texts, strict=False)]
        if not target.is_valid():
            refusal = " ".join(f"{name}: {' '.join(str(e) for e in errs)}" for name, errs in target.errors.items())
        else:
            data = target.cleaned_data
            try:
                made = sweeps.import_sweeps(
                    data["disk"], sources, at=data["finished_at"], user=request.user, tool=data["tool"]
                )
            except (errors.FieldRefused, importing.DuplicateImport) as exc:
                refusal = str(exc)
            else:
                listed = "; ".join(f"sweep {s.pk}, {s.profile_name}" for s in made)
                messages.success(request, f"Imported {len(made)} sweep{'s' if len(made) != 1 else ''} onto "
                                          f"{data['disk']}: {listed}.")  # fmt: skip
                return redirect(sweeps.page_path(made[0]))
        form = SweepImportForm(
            team=team, initial={name: request.POST.get(name) for name in ("disk", "finished_at", "tool")}
        )
    elif request.method == "POST":
        access.require_change(request, team)
        form = SweepImportForm(request.POST, request.FILES, team=team)
        if form.is_valid():
            data = form.cleaned_data
            sources = data["sources"]
            try:
                planned = sweeps.plan_sweeps(sweeps.read_outputs(sources, data["tool"], data["disk"]))
            except errors.FieldRefused as exc:
                refusal = str(exc)
            confirm = {name: request.POST.get(name, "") for name in ("disk", "finished_at", "tool")}
    else:
        form = SweepImportForm(team=team, initial={"disk": request.GET.get("disk")})
    context = {
        "form": form,
        "planned": [_planned(sweep) for sweep in planned],
        "refusal": refusal,
        "sources": sources if planned else [],
        "confirm": confirm,
        "can_change": access.can_change(request, team),
        "max_chars": MAX_IMPORT_CHARS,
    }
    return render(request, "jobs/imports/import_sweep.html", context)


@dataclass
class ClientRow:
    """One client of a group to import, as the confirmation shows it: its disk select preset to the disk chosen or
    matched by its host name."""

    called: str
    iops: str
    bandwidth: str
    disk: Disk | None
    matched: bool


def _group_rows(planned: groups.Planned) -> list[ClientRow]:
    return [
        ClientRow(
            client.called,
            units.format_iops((client.result.summary.get("total") or {}).get("iops")),
            units.format_bytes_per_s((client.result.summary.get("total") or {}).get("bw_bytes_per_s")),
            disk,
            matched,
        )
        for client, disk, matched in zip(planned.run.clients, planned.disks, planned.matched, strict=True)
    ]


def _chosen_disks(request: HttpRequest, disks: list[Disk]) -> list[Disk | None]:
    """The disk of each client's select, in order (None: "match by host name", or not a disk of the team's)."""
    by_pk = {str(disk.pk): disk for disk in disks}
    return [by_pk.get(value) for value in request.POST.getlist("disk")]


@login_required
def import_group(request: HttpRequest) -> HttpResponse:
    """Step 1 reads one output of fio --client and shows its clients, each with a disk (matched by its host name
    where one is), storing nothing; step 2 stores it as a group on the disks chosen, all or nothing
    (jobs/imports/groups.py)."""
    team = access.team(request)
    disks = list(Disk.objects.filter(team=team).select_related("host").order_by("host__name", "label"))
    planned: groups.Planned | None = None
    refusal, warning = "", ""
    confirm: dict[str, str] = {}
    if request.method == "POST" and request.POST.get("step") == "save":
        access.require_change(request, team)
        target = GroupTargetForm(request.POST, team=team)
        name = request.POST.get("source_name", "")[:200]
        text = normalise_newlines(request.POST.get("source_text", ""))
        confirm = {key: request.POST.get(key, "") for key in ("finished_at", "tool")}
        try:
            planned = groups.plan(team, name, text, _chosen_disks(request, disks), request.POST.get("tool", "auto"))
            if not target.is_valid():
                raise errors.FieldRefused(
                    "finished_at", " ".join(str(e) for errs in target.errors.values() for e in errs)
                )
            made = groups.import_group(planned, at=target.cleaned_data["finished_at"], user=request.user)
        except (errors.FieldRefused, importing.DuplicateImport) as exc:
            refusal = str(exc)
        else:
            messages.success(
                request, f"Imported group {made.pk}, {made.profile_name}, onto {len(planned.disks)} disks."
            )
            return redirect(sweeps.page_path(made))
        form = GroupImportForm(team=team, initial=confirm)
    elif request.method == "POST":
        access.require_change(request, team)
        form = GroupImportForm(request.POST, request.FILES, team=team)
        if form.is_valid() and form.cleaned_data["sources"]:
            (name, text), *_ = form.cleaned_data["sources"]
            try:
                planned = groups.plan(team, name, text, (), form.cleaned_data["tool"])
            except errors.FieldRefused as exc:
                refusal = str(exc)
            else:
                problem = groups.refusal(planned)
                warning = str(problem) if problem else ""
            confirm = {key: request.POST.get(key, "") for key in ("finished_at", "tool")}
    else:
        form = GroupImportForm(team=team)
    context = {
        "form": form,
        "planned": planned,
        "rows": _group_rows(planned) if planned else [],
        "disks": disks,
        "refusal": refusal,
        "warning": warning,
        "confirm": confirm,
        "can_change": access.can_change(request, team),
        "max_chars": MAX_IMPORT_CHARS,
    }
    return render(request, "jobs/imports/import_group.html", context)
