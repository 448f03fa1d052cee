"""Which team a request acts for, and the team a new user starts in."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.http import HttpRequest

from jobs.models import Membership, Team

DEFAULT_TEAM_NAME = "Default team"
SESSION_KEY = "team_id"


def current_membership(request: HttpRequest) -> Membership | None:
    """The user's membership of the team chosen in the session, else of their first team."""
    memberships = Membership.objects.filter(user=request.user).select_related("team")
    chosen = request.session.get(SESSION_KEY)
    membership = memberships.filter(team_id=chosen).first() if chosen else None
    return membership or memberships.order_by("created_at").first()


def current_team(request: HttpRequest) -> Team | None:
    membership = current_membership(request)
    return membership.team if membership else None


@transaction.atomic
def place_new_user(user: AbstractBaseUser) -> Membership:
    """The first user owns the default team; later users start a team of their own until invited."""
    default, created = Team.objects.select_for_update().get_or_create(name=DEFAULT_TEAM_NAME)
    if created or not default.memberships.exists():
        return Membership.objects.create(user=user, team=default, role=Membership.Role.OWNER)
    own = Team.objects.create(name=f"{user.get_username()}'s team")
    return Membership.objects.create(user=user, team=own, role=Membership.Role.OWNER)


def role_in(user: AbstractBaseUser, team: Team) -> str | None:
    membership = Membership.objects.filter(user=user, team=team).first()
    return membership.role if membership else None
