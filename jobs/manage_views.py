"""Pages to manage a team's hosts, disks and profiles, to import results, to compare them, and the overview."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import (
    Avg,
    BigIntegerField,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
    Window,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, RowNumber
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from jobs import limits, safety, services, ssh, teams, timeseries, units
from jobs.manage_forms import (
    MAX_IMPORT_CHARS,
    DiskForm,
    HostForm,
    ImportForm,
    ImportTargetForm,
    ProfileForm,
    copy_profile,
    normalise_newlines,
    short_size,
    size_range,
)
from jobs.models import SPEC_FIELDS, Disk, Host, Membership, Profile, Run, RunResult, Team
from jobs.tools.fio import build_fio_job
from jobs.tools.ndisk import build_ndisk_argv
from jobs.tools.options import ToolOptionError
from jobs.tools.summary import PERCENTILES, ParseError
from jobs.views import _disk_for_user, _host_for_user, _require_change, _team

# The sample target of the profile previews: what a run on a directory target would be sent.
SAMPLE_TARGET = "/data/bench"
SAMPLE_RUN_DIR = "/home/you/.benchweb/runs/00000000-0000-4000-8000-000000000000"
CONNECTION_TEST = "uname -sr; command -v fio && fio --version"
SPARK_DAYS = 30
RECENT_FAILURES = timedelta(days=7)
COMPARE_MIN, COMPARE_MAX = 2, 8
BULKY = ("raw_output", "raw_stderr", "command")


def _can_change(request: HttpRequest, team: Team) -> bool:
    return teams.role_in(request.user, team) != Membership.Role.VIEWER


# ----------------------------------------------------------------------------------------- hosts


@login_required
def host_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    hosts = Host.objects.filter(team=team).annotate(disk_count=Count("disks"))
    return render(request, "jobs/manage/host_list.html", {"hosts": hosts, "can_change": _can_change(request, team)})


@login_required
def host_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = _team(request)
    host = _host_for_user(request, pk) if pk else Host(team=team)
    form = HostForm(request.POST or None, instance=host, team=team)
    if request.method == "POST":
        _require_change(request, team)
        if form.is_valid():
            host = form.save(user=request.user)
            messages.success(
                request,
                f"Host {host.name} saved."
                + ("" if host.has_pinned_key else " Next: scan its host key, compare the fingerprint and approve it."),
            )
            return redirect("host_detail", pk=host.pk)
    context = {"form": form, "host": host if pk else None, "can_change": _can_change(request, team)}
    return render(request, "jobs/manage/host_form.html", context)


@dataclass
class ConnectionTest:
    ok: bool
    message: str
    output: str = ""


def _connection_test(host: Host, user: Any = None) -> ConnectionTest:
    if not host.has_pinned_key:
        return ConnectionTest(
            False,
            "This host has no approved host key: scan and approve the host key first "
            "(on the host page), then test again. Nothing was sent to the host.",
        )
    credential = host.credential
    if credential is None:
        return ConnectionTest(False, "This host has no credential: choose or add one on the edit page.")
    is_key = credential.kind == credential.Kind.PRIVATE_KEY
    secret = credential.reveal_secret()
    target = ssh.Target(
        address=host.address,
        port=host.port,
        username=host.username,
        host_key=ssh.HostKey(host.host_key_type, host.host_key_b64, host.host_key_fingerprint),
        password=None if is_key else secret,
        private_key=secret if is_key else None,
        passphrase=credential.reveal_passphrase() or None,
    )
    command = CONNECTION_TEST
    if host.os == Host.OS.AIX:
        command += f"; command -v {shlex.quote(host.ndisk64_path or 'ndisk64')}"
    try:
        with ssh.connect(target, timeout=15) as conn:
            result = conn.run(command, timeout=30)
    except ssh.SSHError as exc:
        services.note_ssh_refusal(host, exc, user=user)
        return ConnectionTest(False, str(exc))
    output = (result.stdout + result.stderr).decode("utf-8", errors="replace").strip()
    if "fio-" in output:
        return ConnectionTest(True, f"Connected and logged in as {host.username}; fio is installed.", output)
    return ConnectionTest(
        True,
        f"Connected and logged in as {host.username}, but fio was not found on the PATH: "
        "install it (Debian/Ubuntu: sudo apt-get install fio).",
        output,
    )


@login_required
def host_test(request: HttpRequest, pk: int) -> HttpResponse:
    host = _host_for_user(request, pk)
    result = None
    if request.method == "POST":
        _require_change(request, host.team)
        result = _connection_test(host, request.user)
    context = {
        "host": host,
        "result": result,
        "command": CONNECTION_TEST,
        "can_change": _can_change(request, host.team),
    }
    return render(request, "jobs/manage/host_test.html", context)


# ----------------------------------------------------------------------------------------- disks


def _disk_types_json() -> dict[str, Any]:
    return {
        kind.id: {
            "label": kind.label,
            "range": size_range(kind),
            "size_required": kind.size_required,
            "inputs": kind.inputs,
        }
        for kind in limits.disk_types()
    }


@login_required
def disk_edit(request: HttpRequest, pk: int | None = None, host_pk: int | None = None) -> HttpResponse:
    if pk:
        disk = _disk_for_user(request, pk)
    else:
        disk = Disk(host=_host_for_user(request, host_pk))
    team = disk.host.team
    form = DiskForm(request.POST or None, instance=disk)
    if request.method == "POST":
        _require_change(request, team)
        if form.is_valid():
            new_target = disk.pk is None or {"target_path", "kind"} & set(form.changed_data)
            disk = form.save()
            messages.success(request, f"Disk {disk.label} saved; its theoretical limits are on this page.")
            if new_target:
                _identify(request, disk, services.identify_new_target(disk, request.user))
            return redirect("disk_detail", pk=disk.pk)
    context = {
        "form": form,
        "disk": disk,
        "host": disk.host,
        "types": _disk_types_json(),
        "can_change": _can_change(request, team),
    }
    return render(request, "jobs/manage/disk_form.html", context)


@login_required
@require_POST
def disk_record_identity(request: HttpRequest, pk: int) -> HttpResponse:
    """Record what the target is now, e.g. after the disk was replaced on purpose."""
    disk = _disk_for_user(request, pk)
    _require_change(request, disk.team)
    try:
        services.record_disk_identity(disk, request.user)
    except services.IdentityUnavailable as exc:
        _identify(request, disk, str(exc))
    else:
        _identify(request, disk, "")
    return redirect("disk_detail", pk=disk.pk)


def _identify(request: HttpRequest, disk: Disk, problem: str) -> None:
    if problem:
        messages.warning(request, problem)
    else:
        messages.info(request, f"Identity of {disk.target_path} recorded: {safety.describe_identity(disk.identity)}.")


@login_required
@require_GET
def disk_limits_preview(request: HttpRequest) -> JsonResponse:
    """The limits the disk form's spec gives, as the user types; errors name the spec field."""
    _team(request)
    form = DiskForm(request.GET, instance=Disk())
    form.is_valid()
    spec_fields = [*SPEC_FIELDS.values(), "throughput_unit"]
    errors = {name: " ".join(form.errors[name]) for name in spec_fields if name in form.errors}
    if errors:
        return JsonResponse({"errors": errors})
    try:
        result = form.instance.limits()
    except limits.SpecError as exc:
        return JsonResponse({"errors": {SPEC_FIELDS.get(exc.field, "disk_type"): str(exc)}})
    return JsonResponse({"text": _limits_text(result)})


def _limits_text(result: limits.Limits) -> str:
    if result.iops is None and result.throughput_bytes_per_s is None:
        return "No limits: a custom spec without values. Give its IOPS and throughput to compare runs with them."
    text = f"{units.format_iops_exact(result.iops)} · {units.format_bytes_per_s(result.throughput_bytes_per_s)}"
    if result.burst_iops or result.burst_throughput_bytes_per_s:
        burst = units.format_iops_exact(result.burst_iops)
        text += f" (burst {burst} · {units.format_bytes_per_s(result.burst_throughput_bytes_per_s)})"
    if result.capped_by_instance:
        text += " — capped by the instance"
    return text


# ----------------------------------------------------------------------------------------- profiles


def _profile_for_user(request: HttpRequest, pk: int) -> Profile:
    """A preset, or a profile of the user's team; another team's profile is a 404."""
    return get_object_or_404(Profile, Q(team=_team(request)) | Q(team__isnull=True), pk=pk)


def profile_line(profile: Profile) -> str:
    if profile.tool == Profile.Tool.NDISK64:
        return (
            f"ndisk64 {profile.pattern} {short_size(profile.block_size_bytes)}, {profile.read_percent}% reads, "
            f"{profile.jobs} processes, {profile.runtime_s} s"
        )
    mix = f" {profile.read_percent}% reads" if profile.rw in (Profile.RW.RW, Profile.RW.RANDRW) else ""
    return (
        f"fio {profile.rw}{mix} {short_size(profile.block_size_bytes)} QD{profile.iodepth}, {profile.jobs} "
        f"jobs, {profile.runtime_s} s"
    )


def command_preview(params: dict[str, Any]) -> str:
    """The exact job file and command, or ndisk64 command line, a run on the sample target would send."""
    if params["tool"] == Profile.Tool.NDISK64:
        return shlex.join(build_ndisk_argv(params, SAMPLE_TARGET, "directory", SAMPLE_RUN_DIR))
    job = build_fio_job(params, SAMPLE_TARGET, "directory", SAMPLE_RUN_DIR, readonly=False)
    return f"{job.argv_quoted()}\n\n# {job.jobfile_path}\n{job.jobfile}"


@login_required
def profile_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    profiles = Profile.objects.filter(Q(team=team) | Q(team__isnull=True))
    rows = [(profile, profile_line(profile)) for profile in profiles]
    context = {
        "presets": [r for r in rows if r[0].builtin],
        "own": [r for r in rows if not r[0].builtin],
        "can_change": _can_change(request, team),
    }
    return render(request, "jobs/manage/profile_list.html", context)


@login_required
def profile_detail(request: HttpRequest, pk: int) -> HttpResponse:
    profile = _profile_for_user(request, pk)
    try:
        preview, preview_error = command_preview(profile.parameters()), None
    except ToolOptionError as exc:
        preview, preview_error = None, str(exc)
    team = _team(request)
    context = {
        "profile": profile,
        "line": profile_line(profile),
        "preview": preview,
        "preview_error": preview_error,
        "sample_target": SAMPLE_TARGET,
        "can_change": _can_change(request, team),
    }
    return render(request, "jobs/manage/profile_detail.html", context)


@login_required
def profile_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = _team(request)
    profile = _profile_for_user(request, pk) if pk else Profile(team=team)
    if profile.builtin:
        messages.info(request, "Built-in presets are read-only: copy this one to change it.")
        return redirect("profile_detail", pk=profile.pk)
    form = ProfileForm(request.POST or None, instance=profile, team=team)
    if request.method == "POST":
        _require_change(request, team)
        if form.is_valid():
            profile = form.save()
            messages.success(request, f"Profile {profile.name} saved.")
            return redirect("profile_detail", pk=profile.pk)
    context = {
        "form": form,
        "profile": profile if pk else None,
        "sample_target": SAMPLE_TARGET,
        "can_change": _can_change(request, team),
    }
    return render(request, "jobs/manage/profile_form.html", context)


@login_required
@require_POST
def profile_copy(request: HttpRequest, pk: int) -> HttpResponse:
    source = _profile_for_user(request, pk)
    team = _team(request)
    _require_change(request, team)
    copy = copy_profile(source, team)
    messages.success(request, f"Copied {source.name} as {copy.name}: change what you need and save.")
    return redirect("profile_edit", pk=copy.pk)


@login_required
@require_GET
def profile_preview(request: HttpRequest) -> JsonResponse:
    """The profile form's job file or command as the user types; errors name the field."""
    form = ProfileForm(request.GET, team=_team(request))
    form.is_valid()
    errors = {name: " ".join(errs) for name, errs in form.errors.items() if name not in ("name", "__all__")}
    if errors:
        return JsonResponse({"errors": errors})
    try:
        return JsonResponse({"text": command_preview(form.instance.parameters())})
    except ToolOptionError as exc:
        return JsonResponse({"errors": {exc.field: str(exc)}})


# ----------------------------------------------------------------------------------------- import


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
        return _efficiency((self.summary.get("total") or {}).get("iops"), self.theoretical)


def _parse_sources(sources: list[tuple[str, str]], disk: Disk | None, tool: str) -> list[Parsed]:
    out = []
    for name, text in sources:
        try:
            result = services.parse_import(text, tool)
        except ParseError as exc:
            out.append(Parsed(name, text, error=str(exc)))
            continue
        summary = result.summary
        try:
            theoretical = (
                _theoretical(disk.limits(block_size=summary.get("block_size_bytes")).as_dict()) if disk else None
            )
        except limits.SpecError:
            theoretical = None
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
    team = _team(request)
    parsed: list[Parsed] = []
    save_errors: list[str] = []
    confirm: Any = {}
    disk = None
    if request.method == "POST" and request.POST.get("step") == "save":
        _require_change(request, team)
        target = ImportTargetForm(request.POST, team=team)
        names, texts = request.POST.getlist("source_name"), request.POST.getlist("source_text")
        sources = [(name[:200], normalise_newlines(text)) for name, text in zip(names, texts, strict=False)]
        if not sources or sum(len(text) for _, text in sources) > MAX_IMPORT_CHARS:
            save_errors.append("The output to save is missing or too large: choose the files again.")
        valid = target.is_valid()
        save_errors += [
            f"{target.fields[name].label if name in target.fields else ''}: {' '.join(errs)}"
            for name, errs in target.errors.items()
        ]
        disk = target.cleaned_data["disk"] if valid else None
        parsed = _parse_sources(sources, disk, request.POST.get("tool", ""))
        if not save_errors and not any(p.error for p in parsed):
            return _save_imports(request, parsed, target.cleaned_data)
        confirm = request.POST
        form = ImportForm(team=team, initial={name: request.POST.get(name) for name in ("disk", "finished_at", "tool")})
    elif request.method == "POST":
        _require_change(request, team)
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
        "can_change": _can_change(request, team),
        "max_chars": MAX_IMPORT_CHARS,
    }
    return render(request, "jobs/manage/import.html", context)


def _save_imports(request: HttpRequest, parsed: list[Parsed], data: dict[str, Any]) -> HttpResponse:
    disk = data["disk"]
    with transaction.atomic():
        runs = [
            services.import_result(
                disk, p.text, name=p.name, at=data["finished_at"], user=request.user, tool=data["tool"]
            )
            for p in parsed
        ]
    messages.success(request, f"Imported {len(runs)} result(s) onto {disk}.")
    return redirect("run_detail", pk=runs[0].pk) if len(runs) == 1 else redirect("disk_detail", pk=disk.pk)


# ----------------------------------------------------------------------------------------- efficiency


def _theoretical(snapshot: dict[str, Any] | None) -> float | None:
    """The IOPS a run could reach at its block size, from its limits snapshot."""
    if not snapshot or snapshot.get("error"):
        return None
    value = snapshot.get("effective_iops")
    return value if value is not None else snapshot.get("iops")


def _efficiency(measured: float | None, theoretical: float | None) -> float | None:
    return 100 * measured / theoretical if measured is not None and theoretical else None


# ----------------------------------------------------------------------------------------- compare


@dataclass
class Column:
    label: str
    detail: str
    url: str
    run: Run | None

    @property
    def summary(self) -> dict[str, Any]:
        return (self.run.summary or {}) if self.run else {}

    @property
    def measured(self) -> float | None:
        return (self.summary.get("total") or {}).get("iops")

    @property
    def theoretical(self) -> float | None:
        return _theoretical(self.run.limits_snapshot) if self.run else None

    @property
    def efficiency(self) -> float | None:
        return _efficiency(self.measured, self.theoretical)

    def cells(self) -> list[str]:
        summary, snapshot = self.summary, (self.run.limits_snapshot or {}) if self.run else {}
        total = summary.get("total") or {}
        cells = [
            self.run.finished_at.strftime("%Y-%m-%d %H:%M") if self.run and self.run.finished_at else "—",
            units.format_iops(self.measured),
            units.format_iops_exact(self.theoretical),
            f"{self.efficiency:.0f} %" if self.efficiency is not None else "—",
            units.format_bytes_per_s(total.get("bw_bytes_per_s")),
            units.format_bytes_per_s(
                snapshot.get("effective_throughput_bytes_per_s") or snapshot.get("throughput_bytes_per_s")
            ),
        ]
        for direction in ("read", "write"):
            clat = (summary.get(direction) or {}).get("clat_us") or {}
            cells += [units.format_micros(clat.get(key)) for key, _ in PERCENTILES]
        return cells


SUMMARY_ROWS = 6
ROW_LABELS = [
    "Finished",
    "Measured IOPS",
    "Theoretical IOPS",
    "Efficiency",
    "Bandwidth",
    "Theoretical throughput",
    *[f"{d} p{percent:g}" for d in ("read", "write") for _, percent in PERCENTILES],
]


@dataclass
class Group:
    title: str
    columns: list[Column]

    def rows(self) -> list[tuple[str, list[str]]]:
        cells = [column.cells() for column in self.columns]
        rows = [(label, [c[i] for c in cells]) for i, label in enumerate(ROW_LABELS)]
        # Latency rows no column has (ndisk64 reports none; a read profile has no write side) are left out.
        return [row for i, row in enumerate(rows) if i < SUMMARY_ROWS or any(cell != units.DASH for cell in row[1])]


def _ids(request: HttpRequest, key: str) -> list[int]:
    """?disks=1,2 and ?disks=1&disks=2 alike."""
    parts = [part.strip() for value in request.GET.getlist(key) for part in value.split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise Http404(f"?{key}= takes numbers separated by commas, e.g. ?{key}=3,7.")
    return list(dict.fromkeys(int(part) for part in parts))


def _disk_groups(disks: list[Disk]) -> list[Group]:
    latest = (
        Run.objects.filter(disk__in=disks, state=Run.State.SUCCEEDED)
        .annotate(
            rank=Window(RowNumber(), partition_by=[F("disk_id"), F("profile_name")], order_by=F("finished_at").desc())
        )
        .filter(rank=1)
        .defer(*BULKY)
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
        return {
            "labels": [[c.label, c.run.profile_name[:28]] for c in columns],
            "datasets": [
                {"label": "measured", "kind": "measured", "series": 0, "data": [c.measured for c in columns]},
                {"label": "theoretical", "kind": "theoretical", "series": 0, "data": [c.theoretical for c in columns]},
            ],
        }
    labels = [g.title for g in groups]
    datasets = []
    for i, column in enumerate(groups[0].columns if groups else []):
        for kind in ("measured", "theoretical"):
            data = [getattr(g.columns[i], kind) for g in groups]
            label = f"{column.detail}:{column.label} {kind}"
            datasets.append({"label": label, "kind": kind, "series": i, "data": data})
    return {"labels": labels, "datasets": datasets}


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    disk_ids, run_ids = _ids(request, "disks"), _ids(request, "runs")
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
        found_runs = {
            r.pk: r for r in Run.objects.filter(team=team, pk__in=run_ids).select_related("disk__host").defer(*BULKY)
        }
        if len(found_runs) != len(run_ids):
            raise Http404("No such run in your team.")
        if not problem:
            columns = [_run_column(found_runs[pk]) for pk in run_ids]
            groups = [Group("Selected runs", columns)]
    context = {
        "groups": groups,
        "problem": problem,
        "by_disk": bool(disk_ids),
        "chart": _chart(groups, bool(disk_ids)),
        "chosen_disks": set(disk_ids),
        "chosen_runs": set(run_ids),
        "disks": Disk.objects.filter(team=team).select_related("host"),
        "runs": Run.objects.filter(team=team, state=Run.State.SUCCEEDED)
        .select_related("disk__host")
        .defer(*BULKY, "summary", "parameters")
        .order_by("-finished_at")[:50],
    }
    return render(request, "jobs/manage/compare.html", context)


# ----------------------------------------------------------------------------------------- overview


@dataclass
class Sparkline:
    line: str
    band: str
    dots: list[tuple[float, float]]
    limit_y: float | None
    label: str


SPARK_W, SPARK_H, SPARK_PAD = 120.0, 32.0, 2.0
EPOCH = date(1970, 1, 1)


def _sparkline(days: list[dict[str, Any]], limit: float | None, start: datetime) -> Sparkline | None:
    if not days:
        return None
    top = max([d["high"] for d in days] + [limit or 0]) * 1.05 or 1.0
    first_day = start.astimezone(UTC).date()

    def x(day: Any) -> float:
        return round(SPARK_PAD + (SPARK_W - 2 * SPARK_PAD) * (day - first_day).days / SPARK_DAYS, 1)

    def y(value: float) -> float:
        return round(SPARK_H - SPARK_PAD - (SPARK_H - 2 * SPARK_PAD) * value / top, 1)

    line = " ".join(f"{x(d['day'])},{y(d['mean'])}" for d in days)
    band = " ".join(
        [f"{x(d['day'])},{y(d['high'])}" for d in days] + [f"{x(d['day'])},{y(d['low'])}" for d in reversed(days)]
    )
    low, high = min(d["low"] for d in days), max(d["high"] for d in days)
    label = f"{len(days)} days with results; from {units.format_iops(low)} to {units.format_iops(high)}"
    if limit:
        label += f"; theoretical {units.format_iops_exact(limit)}"
    dots = [(x(d["day"]), y(d["mean"])) for d in days] if len(days) < 3 else []
    return Sparkline(line, band, dots, y(limit) if limit else None, label)


@dataclass
class DiskRow:
    disk: Disk
    last: dict[str, Any] | None
    spark: Sparkline | None

    @property
    def efficiency(self) -> float | None:
        return _efficiency(self.last["iops"], self.last["theoretical"]) if self.last else None


def _as_float(path: str) -> Cast:
    return Cast(KT(path), FloatField())


def _disk_rows(team: Team, start: datetime) -> list[DiskRow]:
    """A constant number of queries however many disks: the last result per disk, then daily figures. Both
    read the narrow per-run results (RunResult), not the runs' JSON summaries."""
    newest = RunResult.objects.filter(disk=OuterRef("pk")).order_by("-finished_at", "-run_id")
    disks = list(
        Disk.objects.filter(team=team)
        .select_related("host")
        .annotate(last_run_id=Subquery(newest.values("run_id")[:1]))
    )
    last = {
        row["disk_id"]: row
        for row in RunResult.objects.filter(run_id__in=[d.last_run_id for d in disks if d.last_run_id]).values(
            "disk_id", "profile_name", "finished_at", pk=F("run_id"), iops=F("total_iops"), theoretical=F("limit_iops")
        )
    }
    # UTC days by integer division of the stored epoch milliseconds: a date cast per row is a Python function
    # call in SQLite, and was most of this page's time with 200 disks.
    epoch_day = ExpressionWrapper(F("finished_ms") / timeseries.DAY_MS, output_field=BigIntegerField())
    daily = [
        row | {"day": EPOCH + timedelta(days=row["day"])}
        for row in RunResult.objects.filter(disk__team=team, finished_at__gte=start)
        .values("disk_id", "profile_name", day=epoch_day)
        .annotate(mean=Avg("total_iops"), low=Min("total_iops"), high=Max("total_iops"))
        .order_by("day")
    ]
    series: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in daily:
        if row["mean"] is not None:
            series.setdefault((row["disk_id"], row["profile_name"]), []).append(row)
    rows = []
    for disk in disks:
        result = last.get(disk.pk)
        days = series.get((disk.pk, result["profile_name"]), []) if result else []
        rows.append(DiskRow(disk, result, _sparkline(days, result["theoretical"] if result else None, start)))
    return rows


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    now = timezone.now()
    runs = Run.objects.filter(team=team).select_related("disk__host").defer(*BULKY, "summary")
    active = list(runs.filter(state__in=Run.ACTIVE_STATES).order_by("started_at"))
    for run in active:
        expected = (run.progress or {}).get("expected_s")
        run.percent = min(100.0, 100 * run.progress.get("elapsed_s", 0) / expected) if expected else None
    context = {
        "rows": _disk_rows(team, now - timedelta(days=SPARK_DAYS)),
        "host_count": Host.objects.filter(team=team).count(),
        "first_host": Host.objects.filter(team=team).first(),
        "active": active,
        # Due longest first; ordering by created_at made SQLite walk the team's whole history by that index.
        "waiting": runs.filter(state=Run.State.PENDING).exclude(not_before__gt=now).order_by("not_before", "pk")[:10],
        "failed": runs.filter(
            state__in=(Run.State.FAILED, Run.State.ERROR, Run.State.LOST), finished_at__gte=now - RECENT_FAILURES
        ).order_by("-finished_at")[:10],
        "spark_days": SPARK_DAYS,
        "can_change": _can_change(request, team),
    }
    return render(request, "jobs/manage/overview.html", context)
