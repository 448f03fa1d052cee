"""Which team a request acts for, and the team a new user starts in."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
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


LAST_OWNER = "This is the team's last owner: make another member an owner first."


class MembershipRefused(ValueError):
    """A membership change that cannot be made; the message says why and what to do."""


def find_user(username_or_email: str) -> AbstractBaseUser:
    """The one account with this username or email address."""
    value = username_or_email.strip()
    users = get_user_model().objects.filter(Q(username=value) | Q(email__iexact=value) & ~Q(email=""))
    found = list(users[:2])
    if len(found) != 1:
        problem = "No account has" if not found else "Several accounts share"
        raise MembershipRefused(
            f"{problem} the username or email {value!r}; give the exact username (they sign up first)."
        )
    return found[0]


def last_owner_guard(membership: Membership) -> None:
    """Refuse to demote or remove a team's last owner."""
    owners = Membership.objects.filter(team_id=membership.team_id, role=Membership.Role.OWNER)
    if membership.role == Membership.Role.OWNER and not owners.exclude(pk=membership.pk).exists():
        raise MembershipRefused(LAST_OWNER)
