"""A Prometheus scrape of GET /metrics read back as numbers, with the viewer's token it takes and the finished runs it
reports: what the metrics and dashboard tests share."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from jobs.api.models import ApiToken
from jobs.models import Membership, Run
from tests.factories import RunFactory, fio_summary


def scrape(client: Client, token: str | None = None) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{metric name: {sorted labels: value}} of a 200 answer to GET /metrics."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse(response.content.decode())


def parse(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def token_for(team, username: str) -> str:
    user = User.objects.create_user(username)
    Membership.objects.create(user=user, team=team, role=Membership.Role.VIEWER)
    return ApiToken.issue(user, team, "prometheus")[1]


def finished(disk, profile, when, **summary) -> Run:
    return RunFactory(disk=disk, profile=profile, succeeded=True, recorded=True, finished_at=when,
                      summary=fio_summary(**summary), parameters=profile.parameters())  # fmt: skip
