"""This object, for this user in this team, or a 404: every page finds what it shows through here.

A page acts in the team chosen in the session (jobs.teams.membership.current_team); another team's object is
a 404, never a 403, so ids do not tell what exists elsewhere. Viewers look; changing needs the member role, and
a few things (alert channels) the owner role.
The API scopes its querysets the same way in jobs.api.base.TeamViewSet.
"""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from jobs.models import Disk, Host, Membership, Profile, Run, RunSet, Schedule, Team
from jobs.teams import membership as teams

M = TypeVar("M", bound=Model)


def team(request: HttpRequest) -> Team:
    found = teams.current_team(request)
    if found is None:
        raise Http404("You are not in a team.")
    return found


def membership(request: HttpRequest) -> Membership:
    found = teams.current_membership(request)
    if found is None:
        raise Http404("You are not in a team.")
    return found


def can_change(request: HttpRequest, in_team: Team) -> bool:
    return teams.role_in(teams.signed_in_user(request), in_team) != Membership.Role.VIEWER


def require_change(request: HttpRequest, in_team: Team) -> None:
    if not can_change(request, in_team):
        raise PermissionDenied("Viewers can look but not change anything; ask an owner for the member role.")


def is_owner(request: HttpRequest, in_team: Team) -> bool:
    return teams.role_in(teams.signed_in_user(request), in_team) == Membership.Role.OWNER


def require_owner(request: HttpRequest, in_team: Team, what: str) -> None:
    if not is_owner(request, in_team):
        raise PermissionDenied(f"Only the team's owners {what}; ask an owner.")


def owned(request: HttpRequest, queryset: QuerySet[M] | type[M], pk: int) -> M:
    """The row pk of the user's current team, or a 404."""
    return get_object_or_404(queryset, pk=pk, team=team(request))


def host(request: HttpRequest, pk: int) -> Host:
    return owned(request, Host.objects.select_related("credential"), pk)


def disk(request: HttpRequest, pk: int) -> Disk:
    return owned(request, Disk.objects.select_related("host"), pk)


def run(request: HttpRequest, pk: int) -> Run:
    return owned(request, Run.objects.select_related("disk__host", "profile", "run_set"), pk)


def run_set(request: HttpRequest, pk: int) -> RunSet:
    return owned(request, RunSet.objects.select_related("disk__host", "profile"), pk)


def schedule(request: HttpRequest, pk: int) -> Schedule:
    return owned(request, Schedule, pk)


def profile(request: HttpRequest, pk: int) -> Profile:
    """A preset, or a profile of the user's team; another team's profile is a 404."""
    return get_object_or_404(Profile, Q(team=team(request)) | Q(team__isnull=True), pk=pk)
