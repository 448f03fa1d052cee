"""One attempt to hand an event to a channel: an e-mail through the configured SMTP server, a signed JSON POST to a
webhook, or a message through Apprise. Each returns an Outcome (sent or not, the reply, the error in words) and
never raises: the caller counts the attempt and schedules the next.

A webhook is signed so its receiver can tell it came from benchweb and was not changed on the way:
`X-Benchweb-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the channel's secret>`. The body
holds `sent_at`, so the time is signed too (`X-Benchweb-Timestamp` repeats it); a receiver refuses old ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage

from jobs.models import AlertChannel
from jobs.notify import texts

USER_AGENT = "benchweb-alerts/1"
ERROR_MAX = 1000


@dataclass(frozen=True)
class Outcome:
    sent: bool
    response: str = ""
    error: str = ""


def send(channel: AlertChannel, payload: dict[str, Any]) -> Outcome:
    try:
        if channel.kind == AlertChannel.Kind.EMAIL:
            return send_email(channel.addresses, payload)
        if channel.kind == AlertChannel.Kind.WEBHOOK:
            return send_webhook(channel.target, channel.reveal_secret(), payload)
        return send_apprise(channel.reveal_apprise_url(), payload)
    except Exception as exc:  # an attempt never takes the worker's task down; the log says what went wrong
        return Outcome(False, error=f"{type(exc).__name__}: {exc}"[:ERROR_MAX])


def send_email(addresses: list[str], payload: dict[str, Any]) -> Outcome:
    message = EmailMessage(texts.subject(payload), texts.body(payload), settings.DEFAULT_FROM_EMAIL, addresses)
    try:
        message.send()
    except smtplib.SMTPRecipientsRefused as exc:
        refused = "; ".join(f"{who}: {code} {reply.decode(errors='replace')}" for who, (code, reply) in
                            exc.recipients.items())  # fmt: skip
        return Outcome(False, error=f"The SMTP server refused every recipient ({refused})."[:ERROR_MAX])
    except smtplib.SMTPResponseException as exc:
        reply = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        return Outcome(False, f"{exc.smtp_code} {reply}"[:300], f"The SMTP server answered {exc.smtp_code}: {reply}")
    except (OSError, smtplib.SMTPException) as exc:
        where = f"{settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
        return Outcome(False, error=f"Could not send through the SMTP server at {where}: {exc}"[:ERROR_MAX])
    # smtplib raises on anything but 250 after the message's data, so reaching here is the server's 250.
    return Outcome(True, f"250 accepted for {len(addresses)} recipient{'s' if len(addresses) > 1 else ''}")


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send_webhook(url: str, secret: str, payload: dict[str, Any]) -> Outcome:
    import requests  # here, not at start-up (bench/startup.py)

    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Benchweb-Event": str(payload.get("event", "")),
        "X-Benchweb-Delivery": str(payload.get("delivery", "")),
        "X-Benchweb-Timestamp": str(payload.get("sent_at", "")),
        "X-Benchweb-Signature": signature(secret, body),
    }
    try:
        answer = requests.post(
            url, data=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS, allow_redirects=False
        )
    except requests.RequestException as exc:
        return Outcome(False, error=f"Could not reach the webhook: {exc}"[:ERROR_MAX])
    status = f"HTTP {answer.status_code}"
    if 200 <= answer.status_code < 300:
        return Outcome(True, status)
    return Outcome(False, status, f"The webhook answered {answer.status_code}: {answer.text[:300]}"[:ERROR_MAX])


def send_apprise(url: str, payload: dict[str, Any]) -> Outcome:
    import apprise  # here, not at start-up: its plugins take ~0.2 s and ~15 MB to load (bench/startup.py)

    notifier = apprise.Apprise()
    notifier.add(url)
    with apprise.LogCapture(level=apprise.logging.WARNING, fmt="%(message)s") as log:
        sent = notifier.notify(title=texts.subject(payload), body=texts.body(payload))
        said = " ".join(log.getvalue().split())
    if sent:
        return Outcome(True, "accepted by the service")
    return Outcome(False, error=(said or "Apprise could not deliver the message and said no more.")[:ERROR_MAX])
