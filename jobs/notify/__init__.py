"""Where alert events go: the team's channels (e-mail, webhooks, Apprise). Replaced by the channels module."""

from __future__ import annotations

from typing import Any


def publish(team_id: int, event: dict[str, Any]) -> None:
    """Queue `event` for every channel of the team that wants it; never blocks, never raises."""
