"""The Alerts page (open first, with acknowledge and expected, filtered by state, kind and disk), an alert's
own page, and the team's alert rules."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from jobs import access
from jobs.alerts import lifecycle
from jobs.alerts.forms import rule_forms
from jobs.models import Alert, Disk

SHOWN = 200


@login_required
def alert_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    found = Alert.objects.filter(team=team).select_related("disk__host", "host", "schedule", "acknowledged_by")
    chosen = {name: request.GET.get(name, "") for name in ("state", "kind", "disk")}
    if chosen["state"] in Alert.State.values:
        found = found.filter(state=chosen["state"])
    elif chosen["state"] != "all":
        chosen["state"] = ""
        found = found.filter(state__in=Alert.UNRESOLVED)
    if chosen["kind"] in Alert.Kind.values:
        found = found.filter(kind=chosen["kind"])
    if chosen["disk"].isascii() and chosen["disk"].isdigit() and len(chosen["disk"]) < 19:
        found = found.filter(disk_id=int(chosen["disk"]))
    alerts = list(lifecycle.ordered(found).prefetch_related("runs")[:SHOWN])
    return render(request, "jobs/alerts/alerts.html", {
        "alerts": alerts, "chosen": chosen, "states": Alert.State.choices, "kinds": Alert.Kind.choices,
        "disks": Disk.objects.filter(team=team).select_related("host").order_by("host__name", "label"),
        "can_change": access.can_change(request, team),
    })  # fmt: skip


@login_required
def alert_detail(request: HttpRequest, pk: int) -> HttpResponse:
    alert = access.owned(request, Alert.objects.select_related("disk__host", "host", "schedule", "change_point"), pk)
    return render(request, "jobs/alerts/alert_detail.html", {
        "alert": alert, "runs": alert.run_list(), "links": lifecycle.describe(alert),
        "can_change": access.can_change(request, alert.team),
    })  # fmt: skip


@login_required
@require_POST
def alert_acknowledge(request: HttpRequest, pk: int) -> HttpResponse:
    alert = access.owned(request, Alert, pk)
    access.require_change(request, alert.team)
    if lifecycle.acknowledge(alert, request.user):
        messages.success(request, f"Acknowledged: {alert.title}. It resolves itself when its condition clears.")
    elif alert.is_resolved:
        messages.info(request, f"{alert.title} was already resolved: {alert.resolution}.")
    return _back(request)


@login_required
@require_POST
def alert_expected(request: HttpRequest, pk: int) -> HttpResponse:
    alert = access.owned(request, Alert.objects.select_related("disk"), pk)
    access.require_change(request, alert.team)
    if not alert.can_be_expected:
        messages.error(request, f"Only an unresolved regression can be marked expected; {alert.title} is not one.")
        return _back(request)
    lifecycle.mark_expected(alert, request.user, request.POST.get("text", "")[:300])
    messages.success(request, f"Marked expected: {alert.title}. Its change is now an annotation and the baseline.")
    return _back(request)


@login_required
def alert_rules(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    forms = rule_forms(team.pk, request.POST or None)
    if request.method == "POST":
        access.require_change(request, team)
        if all(form.is_valid() for form in forms):
            for form in forms:
                lifecycle.save_rule(form.save(commit=False))
            messages.success(request, "Saved the alert rules.")
            return redirect("alert_rules")
    return render(
        request, "jobs/alerts/alert_rules.html", {"forms": forms, "can_change": access.can_change(request, team)}
    )


def _back(request: HttpRequest) -> HttpResponse:
    """To the page the button was on (the list with its filters, or the alert's page), never elsewhere."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, require_https=request.is_secure()):
        return redirect(wanted)
    return redirect("alert_list")
