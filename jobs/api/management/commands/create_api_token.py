"""Make a personal API token for a user in one of their teams and print it (the only time it is shown)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs.api.models import ApiToken
from jobs.models import Membership


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it once. Use it as 'Authorization: Bearer <token>'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="What the token is for.")
        parser.add_argument("--team", help="Team name; default: the user's first team.")
        parser.add_argument("--days", type=int, help="Expire after this many days; default: never.")

    def handle(self, *args: Any, username: str, name: str, team: str | None, days: int | None, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; create one first (sign up, or manage.py createsuperuser).")
        memberships = Membership.objects.filter(user=user).select_related("team").order_by("created_at")
        membership = memberships.filter(team__name=team).first() if team else memberships.first()
        if membership is None:
            where = f"team {team!r}" if team else "any team"
            raise CommandError(f"{username} is not in {where}; an owner adds them on the API's /members/ first.")
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1.")
        expires = timezone.now() + timedelta(days=days) if days else None
        token, secret = ApiToken.issue(user, membership.team, name, expires_at=expires)
        audit.record(membership.team, user, AuditEvent.Action.TOKEN_CREATED, token, name=name, prefix=token.prefix,
                     via="manage.py create_api_token")  # fmt: skip
        self.stderr.write(
            f"Token {token.prefix}… for {username} in {membership.team.name} ({membership.role}); "
            "copy it now, it is not shown again:"
        )
        self.stdout.write(secret)
