"""What an alert reads like in a person's inbox or chat: a one-line subject and a plain-text body with the
summary, the times and the links. The event's links may be paths; they are made absolute with BENCHWEB_PUBLIC_URL
(jobs.links)."""

from __future__ import annotations

from typing import Any

from jobs.links import absolute

WORDS = {"opened": "OPEN", "reopened": "REOPENED", "acknowledged": "ACKNOWLEDGED", "resolved": "RESOLVED"}
SUBJECT_MAX = 200


def subject(event: dict[str, Any]) -> str:
    """The state, the kind and the title: "[benchweb] OPEN regression: disk data on vm1, 4k randread -31 %"."""
    alert = event.get("alert") or {}
    state = WORDS.get(event.get("event", ""), str(event.get("event", "")).upper())
    kind = str(alert.get("kind", "")).replace("_", " ")
    title = alert.get("title") or alert.get("summary") or ""
    # A title that starts with its kind's words ("Run failed: …") says the kind once, not twice.
    if kind and title.lower().startswith(kind.lower() + ":"):
        title = title[len(kind) + 1 :].strip()
    line = f"[benchweb] {state} {kind}: {title}" if title else f"[benchweb] {state} {kind}"
    return " ".join(line.split())[:SUBJECT_MAX]


def body(event: dict[str, Any]) -> str:
    alert = event.get("alert") or {}
    lines = [str(alert.get("summary") or alert.get("title") or ""), ""]
    where = [f"{name}: {alert[name]}" for name in ("team", "host", "disk", "profile") if alert.get(name)]
    lines += where
    lines += [
        f"{label}: {alert[name]}"
        for name, label in (("opened_at", "Opened"), ("acknowledged_at", "Acknowledged"), ("resolved_at", "Resolved"))
        if alert.get(name)
    ]
    links = [(label, absolute(alert.get(name) or "")) for name, label in (("url", "Alert"), ("chart_url", "Chart"))]
    links += [("Run", absolute(url)) for url in alert.get("run_urls") or []]
    if any(url for _, url in links):
        lines.append("")
        lines += [f"{label}: {url}" for label, url in links if url]
    lines += ["", "Times are UTC (ISO 8601). Sent by benchweb; change what reaches you on its Alert channels page."]
    return "\n".join(lines).strip() + "\n"
