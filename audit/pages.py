from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from audit.models import AuditEvent
from jobs.models import Membership
from jobs.teams import membership as teams

PAGE_SIZE = 100


@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    """The current team's audit log, newest first; owners only."""
    team = teams.current_team(request)
    if team is None:
        raise Http404("You are not in a team.")
    if teams.role_in(teams.signed_in_user(request), team) != Membership.Role.OWNER:
        raise PermissionDenied("Only the team's owners can read its audit log.")
    events = AuditEvent.objects.filter(team=team).select_related("actor")
    action = request.GET.get("action", "")
    if action in AuditEvent.Action.values:
        events = events.filter(action=action)
    page = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "team": team, "actions": AuditEvent.Action.choices, "action": action}
    return render(request, "audit/event_list.html", context)
