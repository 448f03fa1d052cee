"""A set's page (a sweep: its progress, its points, its curves and their knees under the rule asked for; a group: a
first draft, its members and its numbers; a group-size sweep: its sizes and its curve), its charts' data, cancelling
it, and the form that starts a group; a group's history (its total over time against its limit) and groups compared
side by side."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import access
from jobs.models import Disk, RunSet, Team
from jobs.results.stats import StatsError
from jobs.runs.queueing import RunRefused
from jobs.sets import cancelling, comparing, facts, group_compare, group_history, reading, requesting
from jobs.sets.forms import GroupForm, rule_form
from jobs.shares.forms import ShareForm


@login_required
def set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run_set = access.run_set(request, pk)
    can_change = access.can_change(request, run_set.team)
    if run_set.kind == RunSet.Kind.GROUP:
        context = facts.group_page(run_set) | {"can_change": can_change, "group_links": _group_links(run_set)}
        context["share_form"] = ShareForm() if can_change and run_set.is_final else None
        return render(request, "jobs/sets/group_detail.html", context)
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
    return requesting.request_group(
        disks, profile, form.caps(), synchronised_by=form.synchronised_by(), user=request.user
    )


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


def _group_links(run_set: RunSet) -> dict[str, str]:
    """Where a group's page leads (templates/jobs/sets/_group_links.html): its history, the latest groups of its
    series compared (this one and up to three before it), its report and its members as CSV."""
    found = {"history": reverse("group_history", args=[run_set.pk])}
    if run_set.is_final:
        earlier = [pk for pk in group_history.series_ids(run_set) if pk != run_set.pk][-3:]
        if earlier:
            found["compare"] = f"{reverse('group_compare')}?sets={','.join(map(str, [*earlier, run_set.pk]))}"
    return found


@login_required
def group_history_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The group's series over time: each group's all-running total against its limit, charted and listed."""
    run_set = access.run_set(request, pk)
    if run_set.kind != RunSet.Kind.GROUP:
        raise Http404("Only a group has a history of groups; a sweep's curves are on its page.")
    found = group_history.history(run_set)
    disks = Disk.objects.filter(team=run_set.team, pk__in=found["disks"]).select_related("host")
    context = {"run_set": run_set, "title": f"{run_set.label.capitalize()} · history", "history": found, "disks": disks}
    return render(request, "jobs/sets/group_history.html", context)


@login_required
def group_compare_page(request: HttpRequest) -> HttpResponse:
    """Two to eight groups side by side (?sets=12,15): totals, limit, spread, and each member's IOPS."""
    team = access.team(request)
    found, problem = None, None
    if request.GET:
        try:
            found = group_compare.comparison(group_compare.parse(request.GET, team))
        except StatsError as exc:
            problem = {"field": exc.field, "message": str(exc)}
    groups = RunSet.objects.filter(team=team, kind=RunSet.Kind.GROUP, finished_at__isnull=False)
    context = {"title": "Compare groups", "found": found, "problem": problem, "asked": request.GET.getlist("sets"),
               "groups": groups.order_by("-finished_at", "-pk")[:GROUPS_OFFERED]}  # fmt: skip
    return render(request, "jobs/sets/group_compare.html", context, status=400 if problem else 200)


# The Compare groups form offers the team's newest groups that ended.
GROUPS_OFFERED = 200
