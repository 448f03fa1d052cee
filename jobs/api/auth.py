"""How an API request is authenticated, and which team and role it acts with.

A browser session acts in the team chosen in the session (jobs.teams.membership.current_team); a token acts in the
team it was made for, and only while its user is still a member there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db.models import OuterRef, Subquery
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from jobs.api.models import ApiToken
from jobs.models import Membership, Team
from jobs.teams import membership as teams

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    class TokenRole(TypedDict):
        """What TokenAuthentication annotates its token with: the role of its user in its team."""

        role: str


LAST_USED_EVERY = timedelta(seconds=60)


class TokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer bw_…`. Anything else in the header is left to the other authenticators."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() != self.keyword.lower():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Give the token as 'Authorization: Bearer <token>', one value.")
        parts = ApiToken.split(header[1])
        role = Membership.objects.filter(user=OuterRef("user"), team=OuterRef("team")).values("role")[:1]
        token = (
            ApiToken.objects.select_related("user", "team")
            .annotate(role=Subquery(role))
            .filter(prefix=parts[0])
            .first()
            if parts
            else None
        )
        if token is None or parts is None or not token.matches(parts[1]):
            raise exceptions.AuthenticationFailed("This API token is not valid: check that it was copied whole.")
        if token.revoked_at:
            raise exceptions.AuthenticationFailed(
                f"This API token ({token.prefix}…) was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC; create a "
                "new one."
            )
        if token.is_expired:
            raise exceptions.AuthenticationFailed(
                f"This API token ({token.prefix}…) expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; create a new one."
            )
        if not token.user.is_active or token.role is None:
            raise exceptions.AuthenticationFailed(
                f"This API token's user is no longer an active member of {token.team.name}; ask an owner."
            )
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_EVERY:
            # At most one write a minute per token: a GET should not cost a commit (and a WAL flush) each time.
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to a request without credentials.
        return f'{self.keyword} realm="api"'


class TokenScheme(OpenApiAuthenticationExtension):
    """Describes the token header in the OpenAPI schema."""

    target_class = TokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Bearer")  # noqa: S106


@dataclass(frozen=True)
class Access:
    team: Team
    role: str

    @property
    def can_change(self) -> bool:
        return self.role in (Membership.Role.OWNER, Membership.Role.MEMBER)

    @property
    def is_owner(self) -> bool:
        return self.role == Membership.Role.OWNER


_ACCESS_ATTRIBUTE = "_benchweb_access"  # where access() keeps its answer on the request


def access(request: Request) -> Access | None:
    """The team and role of this request, worked out once per request."""
    if not hasattr(request, _ACCESS_ATTRIBUTE):
        setattr(request, _ACCESS_ATTRIBUTE, _access(request))
    found: Access | None = getattr(request, _ACCESS_ATTRIBUTE)
    return found


def _access(request: Request) -> Access | None:
    if isinstance(request.auth, ApiToken):
        token = cast("WithAnnotations[ApiToken, TokenRole]", request.auth)  # as TokenAuthentication annotated it
        return Access(token.team, token.role)
    team = teams.current_team(request)
    if team is None:
        return None
    return Access(team, teams.role_in(teams.signed_in_user(request), team) or Membership.Role.VIEWER)
