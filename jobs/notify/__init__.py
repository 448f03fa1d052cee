"""Telling people: alert events go to the team's channels (e-mail, signed webhooks, Apprise) by the workers.

The alerts call `publish(team_id, event)` once their transaction has committed; it never raises (it passes the
alert path's one boundary, jobs/alerts/boundary.py, which logs what went wrong). It only queues: it stores a
delivery per channel that wants the event and sends a task for each; it never waits for a receiver. The event:
{"event": "opened" |
"reopened" | "acknowledged" | "resolved", "alert": {"id", "kind", "state", "title", "summary", "team", "host",
"disk", "profile", "opened_at", "acknowledged_at", "resolved_at", "url", "chart_url", "run_urls"}}. See
jobs/notify/delivery.py.
"""

from __future__ import annotations

from jobs.notify.delivery import publish

__all__ = ["publish"]
