"""A set's page (a sweep: its progress, its points, its curves and their knees under the rule asked for; a group: a
first draft, its members and its numbers; a group-size sweep: its sizes and its curve), its charts' data, cancelling
it, and the form that starts a group."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import access
from jobs.models import Disk, RunSet, Team
from jobs.results.stats import StatsError
from jobs.runs.queueing import RunRefused
from jobs.sets import cancelling, comparing, facts, reading, requesting
from jobs.sets.forms import GroupForm, rule_form
from jobs.shares.forms import ShareForm


@login_required
def set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    can_change = access.can_change(request, run_set.team)
    if run_set.kind == RunSet.Kind.GROUP:
        return render(request, "jobs/sets/group_detail.html", facts.group_page(run_set) | {"can_change": can_change})
    if run_set.kind == RunSet.Kind.GROUP_SIZES:
        context = facts.group_sizes_page(run_set) | {"can_change": can_change}
        return render(request, "jobs/sets/group_sizes_detail.html", context)
    form = rule_form(request.GET)
    context = facts.page(run_set, form.rule()) | {
        "form": form,
        "can_change": can_change,
        "share_form": ShareForm() if can_change else None,
        "query": request.GET.urlencode(),
    }
    return render(request, "jobs/sets/set_detail.html", context)


@login_required
def set_series(request: HttpRequest, pk: int) -> JsonResponse:
    """The set page's charts, under the knee rule the page's address asks for."""
    run_set = access.run_set(request, pk)
    form = rule_form(request.GET)
    if form.is_bound and not form.is_valid():
        return JsonResponse({"error": form.problems()}, status=400)
    result = reading.result_of(run_set, rule=form.rule())
    return JsonResponse(facts.series(run_set, result))


@login_required
@require_POST
def set_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    access.require_change(request, run_set.team)
    cancelling.cancel(run_set)
    return redirect("set_detail", pk=run_set.pk)


@login_required
def group_new(request: HttpRequest) -> HttpResponse:
    """Run one profile as a group on the disks ticked, or as a group-size sweep over them; refused whole on the form
    (nothing written), else the group's or the sweep's page. ?profile= starts the form on that profile."""
    team = access.team(request)
    form = GroupForm(request.POST or None, team=team, initial={"profile": request.GET.get("profile")})
    if request.method == "POST":
        access.require_change(request, team)
        if form.is_valid():
            try:
                run_set = _start_group(form, request)
            except RunRefused as refused:
                form.refuse(refused)
            else:
                return redirect("set_detail", pk=run_set.pk)
    context = {"form": form, "can_change": access.can_change(request, team), "chosen": len(form["disks"].value() or [])}
    return render(request, "jobs/sets/group_form.html", context)


def _start_group(form: GroupForm, request: HttpRequest) -> RunSet:
    """The group the form asks for, or its group-size sweep when ticked as one."""
    disks, profile = form.chosen_disks(), form.cleaned_data["profile"]
    if form.cleaned_data["as_sizes"]:
        return requesting.request_group_sizes(disks, profile, form.cleaned_data["sizes"], user=request.user)
    return requesting.request_group(disks, profile, form.caps(), user=request.user)


@login_required
def set_compare(request: HttpRequest) -> HttpResponse:
    """Sweeps compared curve on curve: two disks' sweeps of one profile, or one disk's before and after a date."""
    team = access.team(request)
    found, problem = _comparison(request)
    context = {
        "title": "Compare sweeps",
        "found": found,
        "problem": problem,
        "disks": Disk.objects.filter(team=team).select_related("host").order_by("host__name", "label"),
        "profiles": sorted(set(_finished(team).values_list("profile_name", flat=True))),
        "asked": request.GET,
        "query": request.GET.urlencode(),
    }
    return render(request, "jobs/sets/set_compare.html", context, status=400 if problem else 200)


@login_required
def set_compare_series(request: HttpRequest) -> JsonResponse:
    found, problem = _comparison(request)
    if found is None:
        return JsonResponse({"error": problem}, status=400)
    return JsonResponse(found["series"])


def _finished(team: Team) -> QuerySet[RunSet]:
    return comparing.compared().filter(team=team, finished_at__isnull=False)


def _comparison(request: HttpRequest) -> tuple[dict | None, dict | None]:
    """The comparison the address asks for, or the problem (its field and message); nothing asked: neither."""
    if not request.GET:
        return None, None
    try:
        query = comparing.parse(request.GET, access.team(request), timezone.get_current_timezone())
        return comparing.comparison(query), None
    except StatsError as exc:
        return None, {"field": exc.field, "message": str(exc)}
