"""A disk's page (charts, run now) and its registration, identity and limits preview; the disk-type catalog."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Q,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from jobs import access, environment, limits, presets, safety, units
from jobs.changes.forms import AnnotationForm
from jobs.disks import identity, precondition
from jobs.disks.forms import DiskForm, size_range
from jobs.models import SPEC_FIELDS, Alert, Annotation, Disk, Profile, Run, RunResultDay
from jobs.results import burst, compliance, stability, validity
from jobs.runs import queueing
from jobs.shares.forms import ShareForm
from jobs.widgets import MomentInput


class ProfileSelect(forms.Select):
    """The profile choice, with the profiles that cannot run on this disk disabled and the reason in their label."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals: dict[str, str] = {}  # profile id -> the few words why it cannot run here

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        if short := self.refusals.get(str(value)):
            option["label"] = f"{option['label']} — cannot run here: {short}"
            option["attrs"]["disabled"] = True
        return option


class RunNowForm(forms.Form):
    profile = forms.ModelChoiceField(queryset=Profile.objects.none(), empty_label=None, widget=ProfileSelect)

    def __init__(self, *args: Any, disk: Disk, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        profile_field = cast("forms.ModelChoiceField[Profile]", self.fields["profile"])
        profile_field.queryset = Profile.objects.filter(Q(team=disk.team) | Q(team__isnull=True))
        # Disk.refusal_for is the rule queueing.create_run refuses by: a choice disabled here is refused there.
        profiles = list(profile_field.queryset)
        refusals = {profile.pk: disk.refusal_for(profile) for profile in profiles}
        cast(ProfileSelect, profile_field.widget).refusals = {
            str(pk): refusal.short for pk, refusal in refusals.items() if refusal
        }
        runnable = [pk for pk, refusal in refusals.items() if refusal is None]
        self.runnable_count = len(runnable)
        self.refused = [(p.name, refusal.message) for p in profiles if (refusal := refusals[p.pk])]
        if not self.is_bound:
            self.initial["profile"] = default_profile(disk, runnable)


def default_profile(disk: Disk, runnable: list[int]) -> int | None:
    """The profile Run now starts with: the last one run on this disk if it can still run here, else the quick
    check, else the first that can run; None when none can."""
    last = (
        disk.runs.exclude(trigger=Run.Trigger.IMPORT).exclude(profile=None).values_list("profile_id", flat=True).first()
    )
    if last in runnable:
        return last
    quick = Profile.objects.filter(team=None, name=presets.QUICK_CHECK).values_list("pk", flat=True).first()
    if quick in runnable:
        return quick
    return runnable[0] if runnable else None


class PreconditionForm(forms.Form):
    """A preconditioning done outside benchweb (dd, a fill by another tool), recorded by hand. Its ids have a
    prefix of their own: the disk page also holds the note form, whose fields have the same names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "precondition_%s")
        super().__init__(*args, **kwargs)

    at = forms.DateTimeField(
        label="When",
        required=False,
        widget=MomentInput(),
        help_text="When the fill ended, in your time zone; empty: now.",
    )
    how = forms.CharField(
        label="How",
        max_length=300,
        widget=forms.TextInput(attrs={"placeholder": "dd if=/dev/zero bs=1M, twice"}),
        error_messages={"required": "say how the disk was filled, e.g. “dd if=/dev/zero bs=1M, twice”."},
    )


@login_required
def disk_detail(request: HttpRequest, pk: int) -> HttpResponse:
    disk = access.disk(request, pk)
    form = RunNowForm(request.POST or None, disk=disk)
    if request.method == "POST":
        access.require_change(request, disk.team)
        if form.is_valid():
            try:
                run = queueing.request_run(disk, form.cleaned_data["profile"], user=request.user)
            except queueing.RunRefused as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                return redirect("run_detail", pk=run.pk)
    can_change = access.can_change(request, disk.team)
    context = {
        **disk_facts(disk, request.GET),
        "form": form,
        "precondition_form": PreconditionForm(),
        "precondition_at": precondition.recorded_at(disk.precondition),
        "precondition_stale": precondition.stale_reason(disk),
        "annotation_form": AnnotationForm(team=disk.team, disk=disk) if can_change else None,
        "share_form": ShareForm() if can_change else None,
        "unresolved_alerts": disk.alerts.filter(state__in=Alert.UNRESOLVED).count(),
    }
    return render(request, "jobs/disk_detail.html", context)


def disk_facts(disk: Disk, params: Any) -> dict[str, Any]:
    """What the disk page shows without acting: limits, burst credits, compliance, the chart's marks, changes and
    the latest runs. The disk page and its share link (jobs/shares/public.py) both draw from this."""
    disk_limits, limits_error = disk.limits_or_reason()
    runs = list(disk.runs.select_related("profile")[:20])
    credits = burst.disk_burst(disk)
    labels = credits.labels()
    for run in runs:
        run.burst_label = labels.get(run.pk, "")  # type: ignore[attr-defined]  # shown beside its IOPS
    return {
        "disk": disk,
        "limits": disk_limits,
        "limits_error": limits_error,
        "breakdown": _breakdown(disk_limits),
        "runs": runs,
        "burst": credits,
        "environment_changes": _environment_changes(disk),
        "chart_marks": validity.chart_marks(disk, credits),
        "change_points": disk.change_points.all()[:10],
        "disk_annotations": Annotation.for_disk(disk).select_related("disk__host", "host")[:10],
        **_compliance(disk, params),
    }


@login_required
@require_POST
def disk_precondition(request: HttpRequest, pk: int) -> HttpResponse:
    """Record a preconditioning done by hand, or clear the record (the button named clear)."""
    disk = access.disk(request, pk)
    access.require_change(request, disk.team)
    if "clear" in request.POST:
        precondition.clear(disk)
        messages.info(request, f"The preconditioning record of {disk.target_path} was cleared.")
        return redirect("disk_detail", pk=disk.pk)
    form = PreconditionForm(request.POST)
    if form.is_valid():
        try:
            precondition.record_by_hand(disk, at=form.cleaned_data["at"], how=form.cleaned_data["how"],
                                        user=request.user)  # fmt: skip
        except precondition.RecordError as exc:
            form.add_error(exc.field, str(exc))
    if form.errors:
        problems = " ".join(
            f"{form.fields[name].label}: {' '.join(str(error) for error in errors)}"
            for name, errors in form.errors.items()
        )
        messages.warning(request, f"Nothing was recorded. {problems}")
    else:
        messages.info(
            request, f"Preconditioning of {disk.target_path} recorded: runs on it carry no fresh-block warning."
        )
    return redirect("disk_detail", pk=disk.pk)


# How many of a disk's latest runs its page looks through for changes of environment.
ENVIRONMENT_RUNS = 50


def _environment_changes(disk: Disk) -> list[dict[str, Any]]:
    """Where the environment changed between consecutive runs of the disk (latest first), among its last
    ENVIRONMENT_RUNS runs that recorded one: {before, after (run ids), lines, x (the later run's finish, ms since
    the epoch, where the IOPS chart marks it; None while it runs)}. The chart's own series never read the runs
    table (jobs/results/series.py), so the marks come with the page."""
    recent = disk.runs.filter(environment__isnull=False).order_by("-created_at", "-pk")
    rows = list(recent.values_list("pk", "environment", "finished_at")[:ENVIRONMENT_RUNS])[::-1]
    finished = {pk: at for pk, _env, at in rows}
    marks = [
        {"before": before, "after": after, "lines": lines, "x": _epoch_ms(finished[after])}
        for before, after, lines in environment.consecutive_changes([(pk, env) for pk, env, _at in rows])
    ]
    return marks[::-1]


def _epoch_ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


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
    asked = {key: params.get(key, "") for key in ("period", "since", "until", "profile", "tolerance") if key in params}
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


@login_required
def disk_edit(request: HttpRequest, pk: int | None = None, host_pk: int | None = None) -> HttpResponse:
    if pk:
        disk = access.disk(request, pk)
    else:
        assert host_pk is not None  # the new-disk URL names the host
        disk = Disk(host=access.host(request, host_pk))
    team = disk.host.team
    form = DiskForm(request.POST or None, instance=disk)
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            new_target = disk.pk is None or {"target_path", "kind"} & set(form.changed_data)
            disk = form.save()
            messages.success(request, f"Disk {disk.label} saved; its theoretical limits are on this page.")
            if new_target:
                _identify(request, disk, identity.identify_new_target(disk, request.user))
            return redirect("disk_detail", pk=disk.pk)
    context = {
        "form": form,
        "disk": disk,
        "host": disk.host,
        "types": _disk_types_json(),
        "can_change": access.can_change(request, team),
    }
    return render(request, "jobs/manage/disk_form.html", context)


@login_required
@require_POST
def disk_record_identity(request: HttpRequest, pk: int) -> HttpResponse:
    """Record what the target is now, e.g. after the disk was replaced on purpose."""
    disk = access.disk(request, pk)
    access.require_change(request, disk.team)
    try:
        identity.record_disk_identity(disk, request.user)
    except identity.IdentityUnavailable as exc:
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
    access.team(request)
    form = DiskForm(request.GET, instance=Disk())
    form.is_valid()
    spec_fields = [*SPEC_FIELDS.values(), "throughput_unit"]
    errors = {name: " ".join(str(e) for e in form.errors[name]) for name in spec_fields if name in form.errors}
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
    unit = result.total_throughput_unit
    text = f"{units.format_iops_exact(result.iops)} · {limits.rate_text(result.throughput_bytes_per_s, unit)}"
    if result.burst_iops or result.burst_throughput_bytes_per_s:
        burst = [units.format_iops_exact(result.burst_iops)] if result.burst_iops else []
        if result.burst_throughput_bytes_per_s:
            burst.append(limits.rate_text(result.burst_throughput_bytes_per_s, unit))
        lasts = limits.breakdown(result)["burst"]["lasts"]
        text += f" (burst {' · '.join(burst)}{', ' + lasts if lasts else ''})"
    if result.capped_by_instance:
        text += f" — capped by the instance ({' and '.join(result.capped_by_instance)})"
    if result.iops and result.throughput_bytes_per_s:
        text += f"; {limits.crossover_text(result.iops, result.throughput_bytes_per_s, unit)}"
    return text


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
def disk_types(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/disk_types.html", {"types": limits.disk_types()})
