"""GET /metrics: the Prometheus text exposition of a team's series (jobs/metrics/scrape.py).

Prometheus sends `Authorization: Bearer <token>` from a credentials_file. A benchweb API token scrapes its own
team's series, as it reads its own team's API; BENCHWEB_METRICS_TOKEN, when set, is one token that scrapes every
team. Anything else is 401 with `WWW-Authenticate: Bearer`, and a line that says what to send.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from jobs.api.auth import TokenAuthentication
from jobs.metrics.scrape import Scrape
from jobs.models import Team

WHAT_TO_SEND = (
    "Send 'Authorization: Bearer <token>': an API token of your team (the API tokens page, /account/tokens/, or "
    "manage.py create_api_token <user>), or the BENCHWEB_METRICS_TOKEN of this server. In Prometheus: "
    "authorization: {credentials_file: /etc/prometheus/benchweb.token}."
)


class Unauthorized(Exception):
    """The request may not scrape; the message says why and what to send."""


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    try:
        teams = scraped_teams(request)
    except Unauthorized as refused:
        response = HttpResponse(f"{refused}\n", status=401, content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    # The classic text format, which every Prometheus reads (the series' names need none of 1.0.0's escaping).
    return HttpResponse(generate_latest(Scrape(teams)), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def scraped_teams(request: HttpRequest) -> list[Team]:
    """The teams whose series this request may read: every team for the server's metrics token, else the team of
    a valid API token. Unauthorized otherwise."""
    wrapped = Request(request)
    header = authentication.get_authorization_header(wrapped).decode("latin-1").split()
    if len(header) == 2 and header[0].lower() == "bearer" and _is_metrics_token(header[1]):
        return list(Team.objects.order_by("name"))
    try:
        found = TokenAuthentication().authenticate(wrapped)
    except exceptions.AuthenticationFailed as failed:
        raise Unauthorized(failed.detail) from None
    if found is None:
        raise Unauthorized(WHAT_TO_SEND)
    return [found[1].team]


def _is_metrics_token(value: str) -> bool:
    configured: str = settings.METRICS_TOKEN
    return bool(configured) and hmac.compare_digest(value.encode(), configured.encode())
