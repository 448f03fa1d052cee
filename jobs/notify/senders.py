"""One attempt to hand an event to a channel: an e-mail through the configured SMTP server, a signed JSON POST to a
webhook, or a message through Apprise. Each returns an Outcome (sent or not, the reply, the error in words) and
never raises: the caller counts the attempt and schedules the next.

Before anything is sent to a webhook or an Apprise service, the address it resolves to is judged as when the
channel was saved (jobs/egress.py, BENCHWEB_CHANNEL_ALLOW_NETWORKS): a refused one is final, the delivery gives up
with the reason. A webhook is sent to the very address judged; Apprise resolves again itself.

A webhook is signed so its receiver can tell it came from benchweb and was not changed on the way:
`X-Benchweb-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the channel's secret>`. The body
holds `sent_at`, so the time is signed too (`X-Benchweb-Timestamp` repeats it); a receiver refuses old ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage

from jobs import egress
from jobs.models import AlertChannel
from jobs.notify import targets, texts

if TYPE_CHECKING:
    import requests

USER_AGENT = "benchweb-alerts/1"
ERROR_MAX = 1000


@dataclass(frozen=True)
class Outcome:
    sent: bool
    response: str = ""
    error: str = ""
    # Trying again cannot help (the receiver's address is one benchweb will not send to): the delivery gives up.
    final: bool = False


def send(channel: AlertChannel, payload: dict[str, Any]) -> Outcome:
    url = ""
    try:
        if channel.kind == AlertChannel.Kind.EMAIL:
            return send_email(channel.addresses, payload)
        url = channel.reveal_url()
        if channel.kind == AlertChannel.Kind.WEBHOOK:
            return unmasked(send_webhook(url, channel.reveal_secret(), payload), url)
        return unmasked(send_apprise(url, payload), url)
    except Exception as exc:  # an attempt never takes the worker's task down; the log says what went wrong
        return unmasked(Outcome(False, error=f"{type(exc).__name__}: {exc}"[:ERROR_MAX]), url)


def unmasked(outcome: Outcome, url: str) -> Outcome:
    """The outcome with the URL's password (or user name) and the URL itself nowhere in its words."""
    parts = urlsplit(url) if url else None
    hidden = [url, parts.password if parts.password is not None else parts.username] if parts else []
    response, error = outcome.response, outcome.error
    for secret in sorted(filter(None, hidden), key=len, reverse=True):
        shown = targets.masked_url(secret) if secret == url else targets.MASK
        response, error = response.replace(secret, shown), error.replace(secret, shown)
    return replace(outcome, response=response, error=error)


def refused(exc: egress.Refused) -> Outcome:
    return Outcome(False, error=f"Not sent, and not tried again: {exc}."[:ERROR_MAX], final=True)


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
    with requests.Session() as session:
        # Straight to the receiver, through no proxy, on the address the adapter has judged: the one connected to.
        session.trust_env = False
        session.mount("http://", egress.PinnedAdapter(targets.allowed_networks()))
        session.mount("https://", egress.PinnedAdapter(targets.allowed_networks()))
        try:
            answer = session.post(
                url, data=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS, allow_redirects=False
            )
        except egress.Refused as exc:
            return refused(exc)
        except requests.RequestException as exc:
            return Outcome(False, error=f"Could not reach the webhook: {exc}"[:ERROR_MAX])
    return _answered(answer)


def _answered(answer: requests.Response) -> Outcome:
    status = f"HTTP {answer.status_code}"
    if 200 <= answer.status_code < 300:
        return Outcome(True, status)
    return Outcome(False, status, f"The webhook answered {answer.status_code}: {answer.text[:300]}"[:ERROR_MAX])


def send_apprise(url: str, payload: dict[str, Any]) -> Outcome:
    import apprise  # here, not at start-up: its plugins take ~0.2 s and ~15 MB to load (bench/startup.py)

    plugin = apprise.Apprise.instantiate(url)
    if plugin is None:
        return Outcome(False, error="Apprise cannot read this channel's URL any more; enter it again.")
    # Judged right before sending; Apprise resolves the name again itself, so unlike a webhook it is not pinned.
    try:
        for host, port in targets.hosts(plugin):
            egress.checked(host, port, targets.allowed_networks())
    except egress.Refused as exc:
        return refused(exc)
    except (OSError, UnicodeError) as exc:
        return Outcome(False, error=f"Could not resolve the service's host: {exc}"[:ERROR_MAX])
    notifier = apprise.Apprise()
    notifier.add(plugin)
    with apprise.LogCapture(level=apprise.logging.WARNING, fmt="%(message)s") as log:
        sent = notifier.notify(title=texts.subject(payload), body=texts.body(payload))
        said = " ".join(log.getvalue().split())
    if sent:
        return Outcome(True, "accepted by the service")
    return Outcome(False, error=(said or "Apprise could not deliver the message and said no more.")[:ERROR_MAX])
