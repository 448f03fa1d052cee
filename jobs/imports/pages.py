"""Importing results people ran by hand: paste or upload fio/ndisk64 output, preview, save."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from jobs import access, units
from jobs.imports import importing
from jobs.imports.forms import MAX_IMPORT_CHARS, ImportForm, ImportTargetForm, normalise_newlines
from jobs.models import Disk
from jobs.results.compare import efficiency, theoretical_iops
from jobs.tools.summary import PERCENTILES, ParseError


@dataclass
class Parsed:
    name: str
    text: str
    error: str = ""
    format: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    job_errors: str = ""
    theoretical: float | None = None
    latency: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def efficiency(self) -> float | None:
        return efficiency((self.summary.get("total") or {}).get("iops"), self.theoretical)


def _parse_sources(sources: list[tuple[str, str]], disk: Disk | None, tool: str) -> list[Parsed]:
    out = []
    for name, text in sources:
        try:
            result = importing.parse_import(text, tool)
        except ParseError as exc:
            out.append(Parsed(name, text, error=str(exc)))
            continue
        summary = result.summary
        theoretical = theoretical_iops(disk.limits_snapshot(summary.get("block_size_bytes"))) if disk else None
        errors = "; ".join(
            f"job {e['job']} error {e['errno']}" + (f" ({e['message']})" if e.get("message") else "")
            for e in result.job_errors
        )
        out.append(
            Parsed(
                name,
                text,
                format=result.format,
                summary=summary,
                job_errors=errors,
                theoretical=theoretical,
                latency=_latency_rows(summary),
            )
        )
    return out


def _latency_rows(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    keys = [("mean", "mean"), *[(key, f"p{percent:g}") for key, percent in PERCENTILES], ("max", "max")]
    read, write = (summary.get(d) or {} for d in ("read", "write"))
    return [
        (
            label,
            units.format_micros((read.get("clat_us") or {}).get(key)),
            units.format_micros((write.get("clat_us") or {}).get(key)),
        )
        for key, label in keys
    ]


@login_required
def import_results(request: HttpRequest) -> HttpResponse:
    """Step 1 parses and shows the numbers without storing; step 2 stores exactly the text that was shown."""
    team = access.team(request)
    parsed: list[Parsed] = []
    save_errors: list[str] = []
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
        parsed = _parse_sources(sources, disk, request.POST.get("tool", ""))
        if not save_errors and not any(p.error for p in parsed):
            return _save_imports(request, parsed, target.cleaned_data)
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
    context = {
        "form": form,
        "parsed": parsed,
        "ready": bool(parsed) and not save_errors and not any(p.error for p in parsed),
        "save_errors": save_errors,
        "disk": disk,
        "confirm": {name: confirm.get(name, "") for name in ("disk", "finished_at", "tool")},
        "can_change": access.can_change(request, team),
        "max_chars": MAX_IMPORT_CHARS,
    }
    return render(request, "jobs/manage/import.html", context)


def _save_imports(request: HttpRequest, parsed: list[Parsed], data: dict[str, Any]) -> HttpResponse:
    disk = data["disk"]
    with transaction.atomic():
        runs = [
            importing.import_result(
                disk, p.text, name=p.name, at=data["finished_at"], user=request.user, tool=data["tool"]
            )
            for p in parsed
        ]
    messages.success(request, f"Imported {len(runs)} result(s) onto {disk}.")
    return redirect("run_detail", pk=runs[0].pk) if len(runs) == 1 else redirect("disk_detail", pk=disk.pk)
