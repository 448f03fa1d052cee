"""Start-up checks that tell an operator what will go wrong before it does."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

# benchweb's own checks carry this tag, so the start-up commands that check only what they depend on
# (jobs/management/commands/migrate.py) still run them.
TAG = "benchweb"


@register(TAG)
def field_keys_are_shared(app_configs: Any, **kwargs: Any) -> list[Warning]:
    uses_shared_database = settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3"
    if uses_shared_database and not settings.FIELD_KEYS_FROM_ENV:
        return [
            Warning(
                "Credentials are encrypted with a key generated into var/field_keys on this machine only.",
                hint="With a shared database, set BENCHWEB_FIELD_KEYS to the same keys on every web and worker "
                "machine, or credentials saved by one cannot be read by another.",
                id="benchweb.W001",
            )
        ]
    return []


# A token Prometheus sends on every scrape, for every team's series: long enough not to be guessed.
METRICS_TOKEN_MIN_LENGTH = 32


@register(TAG)
def prometheus_and_grafana_settings(app_configs: Any, **kwargs: Any) -> list[Warning]:
    found = []
    if settings.METRICS_TOKEN and len(settings.METRICS_TOKEN) < METRICS_TOKEN_MIN_LENGTH:
        found.append(
            Warning(
                f"BENCHWEB_METRICS_TOKEN is {len(settings.METRICS_TOKEN)} characters long; it reads every team's "
                "series from /metrics.",
                hint=f"Use at least {METRICS_TOKEN_MIN_LENGTH} random characters, e.g. `openssl rand -hex 32`.",
                id="benchweb.W002",
            )
        )
    if bool(settings.GRAFANA_URL) != bool(settings.GRAFANA_TOKEN):
        missing = "BENCHWEB_GRAFANA_TOKEN" if settings.GRAFANA_URL else "BENCHWEB_GRAFANA_URL"
        found.append(
            Warning(
                f"{missing} is not set, so change points and notes are not pushed to Grafana.",
                hint="Set both BENCHWEB_GRAFANA_URL and BENCHWEB_GRAFANA_TOKEN, or neither.",
                id="benchweb.W003",
            )
        )
    if settings.GRAFANA_URL and not settings.GRAFANA_URL.startswith(("http://", "https://")):
        found.append(
            Warning(
                f"BENCHWEB_GRAFANA_URL {settings.GRAFANA_URL!r} is not an http:// or https:// address; every push "
                "to Grafana would fail.",
                hint="Give Grafana's address as a browser reaches it, e.g. https://grafana.example.com.",
                id="benchweb.W004",
            )
        )
    return found


@register(TAG)
def channel_allow_networks_are_networks(app_configs: Any, **kwargs: Any) -> list[Error]:
    if not settings.CHANNEL_ALLOW_NETWORKS:
        return []
    from jobs import egress  # loads requests: only when there is something to parse

    try:
        egress.parse_networks(settings.CHANNEL_ALLOW_NETWORKS)
    except ValueError as exc:
        return [Error(str(exc), hint="Give CIDR networks separated by commas, or leave it empty.", id="benchweb.E001")]
    return []
