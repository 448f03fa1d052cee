from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from jobs import dispatcher, limits, scheduling, services, ssh, teams
from jobs.account_views import SignupForm
from jobs.forms import ScheduleForm
from jobs.models import Disk, Host, Membership, Profile, Run, Schedule, Team


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        teams.tell_about_invitations(self.request)
        return response


class LogoutView(auth_views.LogoutView):
    pass


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.BENCHWEB_ALLOW_SIGNUP:
        raise Http404("Sign-up is turned off on this server; ask an owner to invite you.")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        teams.place_new_user(user)
        teams.claim_invitations(user)
        auth.login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # axes checks sign-ins only
        teams.tell_about_invitations(request)
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    team = teams.current_team(request)
    hosts = Host.objects.filter(team=team).prefetch_related("disks") if team else Host.objects.none()
    disks = Disk.objects.filter(team=team).select_related("host") if team else Disk.objects.none()
    rows = []
    for disk in disks:
        try:
            rows.append((disk, disk.limits(), None))
        except limits.SpecError as exc:
            rows.append((disk, None, str(exc)))
    return render(request, "jobs/home.html", {"hosts": hosts, "disk_rows": rows})


@login_required
def disk_types(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/disk_types.html", {"types": limits.disk_types()})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


# ----------------------------------------------------------------------------------------- access


def _team(request: HttpRequest) -> Team:
    team = teams.current_team(request)
    if team is None:
        raise Http404("You are not in a team.")
    return team


def _require_change(request: HttpRequest, team: Team) -> None:
    if teams.role_in(request.user, team) == Membership.Role.VIEWER:
        raise PermissionDenied("Viewers can look but not change anything; ask an owner for the member role.")


def _host_for_user(request: HttpRequest, pk: int) -> Host:
    return get_object_or_404(Host.objects.select_related("credential"), pk=pk, team=_team(request))


def _disk_for_user(request: HttpRequest, pk: int) -> Disk:
    return get_object_or_404(Disk.objects.select_related("host"), pk=pk, team=_team(request))


def _run_for_user(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(Run.objects.select_related("disk__host", "profile"), pk=pk, team=_team(request))


# ----------------------------------------------------------------------------------------- hosts


@login_required
def host_detail(request: HttpRequest, pk: int) -> HttpResponse:
    host = _host_for_user(request, pk)
    return render(request, "jobs/host_detail.html", {"host": host, "disks": host.disks.all()})


@login_required
@require_POST
def host_scan_key(request: HttpRequest, pk: int) -> HttpResponse:
    host = _host_for_user(request, pk)
    _require_change(request, host.team)
    try:
        key = services.scan_host_key(host, request.user)
    except ssh.SSHError as exc:
        messages.error(request, f"Could not read the host key of {host.name}: {exc}")
    else:
        if host.has_pinned_key and key.fingerprint != host.host_key_fingerprint:
            messages.warning(
                request,
                "The host presents a DIFFERENT key from the approved one. Approve it only if "
                "you know why it changed (reinstall, new host); otherwise someone may be in between.",
            )
        else:
            messages.info(request, "Compare the fingerprint below with the host's own (ssh-keygen -lf on it).")
    return redirect("host_detail", pk=host.pk)


@login_required
@require_POST
def host_approve_key(request: HttpRequest, pk: int) -> HttpResponse:
    host = _host_for_user(request, pk)
    _require_change(request, host.team)
    try:
        services.approve_host_key(host, request.user, request.POST.get("fingerprint", ""))
    except services.RunRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Host key {host.host_key_fingerprint} approved and pinned.")
    return redirect("host_detail", pk=host.pk)


# ----------------------------------------------------------------------------------------- disks and runs


class RunNowForm(forms.Form):
    profile = forms.ModelChoiceField(queryset=Profile.objects.none(), empty_label=None)

    def __init__(self, *args: object, team: Team, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["profile"].queryset = Profile.objects.filter(Q(team=team) | Q(team__isnull=True))


@login_required
def disk_detail(request: HttpRequest, pk: int) -> HttpResponse:
    disk = _disk_for_user(request, pk)
    form = RunNowForm(request.POST or None, team=disk.team)
    if request.method == "POST":
        _require_change(request, disk.team)
        if form.is_valid():
            try:
                run = services.request_run(disk, form.cleaned_data["profile"], user=request.user)
            except services.RunRefused as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                return redirect("run_detail", pk=run.pk)
    try:
        disk_limits, limits_error = disk.limits(), None
    except limits.SpecError as exc:
        disk_limits, limits_error = None, str(exc)
    runs = disk.runs.select_related("profile")[:20]
    return render(
        request,
        "jobs/disk_detail.html",
        {"disk": disk, "form": form, "limits": disk_limits, "limits_error": limits_error, "runs": runs},
    )


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for_user(request, pk)
    return render(request, "jobs/run_detail.html", {"run": run, "summary": run.summary or {}})


@login_required
def run_progress(request: HttpRequest, pk: int) -> JsonResponse:
    run = _run_for_user(request, pk)
    return JsonResponse(
        {
            "id": run.pk,
            "state": run.state,
            "state_label": run.get_state_display(),
            "explanation": run.explanation,
            "progress": run.live_progress(),
            "final": run.is_final,
        }
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for_user(request, pk)
    _require_change(request, run.team)
    services.cancel(run)
    return redirect("run_detail", pk=run.pk)


@login_required
def run_raw(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for_user(request, pk)
    response = HttpResponse(run.raw_output, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="benchweb-run-{run.pk}.txt"'
    return response


# ----------------------------------------------------------------------------------------- schedules


def _schedule_for_user(request: HttpRequest, pk: int) -> Schedule:
    return get_object_or_404(Schedule, pk=pk, team=_team(request))


@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    schedules = Schedule.objects.filter(team=team).prefetch_related("targets", "scheduleprofile_set__profile")
    last = {
        run.schedule_id: run
        for run in Run.objects.filter(schedule__team=team, state__in=Run.FINAL_STATES).order_by("finished_at")
    }
    rows = [(schedule, last.get(schedule.pk)) for schedule in schedules]
    return render(request, "jobs/schedule_list.html", {"rows": rows})


@login_required
def schedule_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    team = _team(request)
    schedule = _schedule_for_user(request, pk) if pk else None
    form = ScheduleForm(request.POST or None, instance=schedule, team=team)
    if request.method == "POST":
        _require_change(request, team)
        if form.is_valid():
            saved = form.save()
            messages.success(request, f"Schedule {saved.name} saved; next fire {_when(saved.next_fire_at)}.")
            return redirect("schedule_list")
    return render(request, "jobs/schedule_form.html", {"form": form, "schedule": schedule})


def _when(moment: datetime | None) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z") if moment else "none (outside its window)"


@login_required
@require_POST
def schedule_preview(request: HttpRequest) -> JsonResponse:
    """The next 10 fires and each target's start, for the form's live preview; errors name the field."""
    team = _team(request)
    form = ScheduleForm(request.POST, team=team)
    if not form.is_valid():
        # 200 like the other live previews: an unfinished form is not a failed request (and logs no console error).
        return JsonResponse({"errors": {k: [str(m) for m in v] for k, v in form.errors.items()}})
    draft = form.save(commit=False)
    fires = scheduling.next_fires(draft.rule(), timezone.now(), 10)
    profiles = form.chosen_profiles()
    plan = dispatcher.plan_for(list(form.cleaned_data["targets"]), profiles, draft)
    zone = ZoneInfo(draft.timezone)
    return JsonResponse(
        {
            "fires": [
                {
                    "at": timezone.localtime(fire, zone).isoformat(),
                    "runs": [
                        {
                            "disk": str(p.disk),
                            "profile": p.profile.name,
                            "offset_s": p.offset_s,
                            "start": timezone.localtime(fire + timedelta(seconds=p.offset_s), zone).isoformat(),
                        }
                        for p in plan
                    ],
                }
                for fire in fires
            ]
        }
    )


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = _schedule_for_user(request, pk)
    _require_change(request, schedule.team)
    schedule.enabled = not schedule.enabled
    schedule.save()
    messages.info(request, f"Schedule {schedule.name} {'resumed' if schedule.enabled else 'paused'}.")
    return redirect("schedule_list")


@login_required
@require_POST
def schedule_run_now(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = _schedule_for_user(request, pk)
    _require_change(request, schedule.team)
    created = dispatcher.run_schedule_now(schedule, request.user)
    messages.success(request, f"{created} run(s) created for {schedule.name}, staggered as usual.")
    return redirect("schedule_list")


@login_required
def calendar(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=12)
    end = start + timedelta(days=7, hours=12)
    span = (end - start).total_seconds()
    lanes = dispatcher.calendar(team, start, end)
    for lane in lanes:
        for bar in lane["bars"]:
            bar.left = _pct(bar.start, start, span)
            bar.width = max(0.15, _pct(bar.end, start, span) - bar.left)
    midnights = [(start + timedelta(days=d)).replace(hour=0) for d in range(9)]
    ticks = [tick for tick in midnights if start <= tick <= end]
    return render(request, "jobs/calendar.html", {
        "lanes": lanes, "start": start, "end": end, "span": span, "now_pct": _pct(timezone.now(), start, span),
        "ticks": [(tick, _pct(tick, start, span)) for tick in ticks],
    })  # fmt: skip


def _pct(moment: datetime, start: datetime, span: float) -> float:
    return max(0.0, min(100.0, 100 * (moment - start).total_seconds() / span))
