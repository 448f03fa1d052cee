"""Where a channel sends, checked where people type it (the channel form and the API): e-mail addresses, a webhook
URL (http or https only), an Apprise URL whose scheme Apprise knows. Each refusal names the field and the fix.

A URL's host is judged by jobs/egress.py against BENCHWEB_CHANNEL_ALLOW_NETWORKS, here after resolving it and
again by the sender before each delivery (`hosts` says which hosts an Apprise URL makes benchweb connect to).
A name that does not resolve now is accepted: it is judged when an alert is sent. A URL's user:password@ is
shown masked (`masked_url`), never as typed."""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from jobs import egress

MAX_ADDRESSES = 20
MASK = "\N{BULLET}" * 3
DEFAULT_PORTS = {"http": 80, "https": 443}


class ChannelRefused(ValueError):
    """A channel's input refused: the field at fault and what to write instead."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def email_addresses(addresses: list[str]) -> str:
    """The addresses as the channel stores them: comma-separated, each checked."""
    cleaned = [address.strip() for address in addresses if address.strip()]
    if not cleaned:
        raise ChannelRefused("addresses", "Give at least one e-mail address, e.g. storage-oncall@example.com.")
    if len(cleaned) > MAX_ADDRESSES:
        raise ChannelRefused("addresses", f"Give at most {MAX_ADDRESSES} addresses; use a mailing list for more.")
    for address in cleaned:
        try:
            validate_email(address)
        except ValidationError as exc:
            raise ChannelRefused(
                "addresses", f"{address[:100]!r} is not an e-mail address; write it as name@example.com."
            ) from exc
    return ", ".join(cleaned)


def _parts(url: str) -> SplitResult:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError as exc:
        raise ChannelRefused("url", f"This is not a URL ({exc}); write one like https://hooks.example.com/in.") from exc
    return parts


def allowed_networks() -> list[egress.Network]:
    return egress.parse_networks(settings.CHANNEL_ALLOW_NETWORKS)


def masked_url(url: str) -> str:
    """The URL with its password (or a user name alone, which may be a token) shown as •••."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    who = f"{parts.username}:{MASK}" if parts.password is not None else MASK
    return urlunsplit(parts._replace(netloc=f"{who}@{host}"))


def hosts(plugin: Any) -> list[tuple[str, int]]:
    """The hosts an Apprise service connects to when its URL names them (json://, ntfys://, matrixs://, mailto's
    SMTP server …); none for services at a fixed address (Slack, Teams, Discord …), whose first part is a token."""
    smtp = getattr(plugin, "smtp_host", None)
    if smtp:
        return [(str(smtp), int(getattr(plugin, "port", None) or 0))]
    host = getattr(plugin, "host", None)
    if host and "host" in getattr(plugin, "template_tokens", {}):
        return [(str(host), int(getattr(plugin, "port", None) or 0))]
    return []


def reachable(host: str, port: int) -> None:
    """Refuses a host that resolves to an address benchweb will not send to; a name that does not resolve now
    passes (the sender judges it again before each delivery)."""
    try:
        egress.checked(host, port, allowed_networks())
    except egress.Refused as exc:
        raise ChannelRefused("url", f"benchweb will not send alerts to this URL: {exc}.") from exc
    except (OSError, UnicodeError):
        return


def webhook_url(url: str) -> tuple[str, str]:
    """The webhook URL, and as it is shown (masked), once its host is judged."""
    parts = _parts(url)
    if parts.scheme not in ("http", "https"):
        raise ChannelRefused(
            "url",
            f"A webhook URL starts with https:// (or http://), not {parts.scheme or 'nothing'}:; "
            "for Slack, Teams and other services choose the Apprise kind.",
        )
    if not parts.hostname:
        raise ChannelRefused("url", "This webhook URL names no host; write it as https://hooks.example.com/benchweb.")
    if MASK in (parts.password or "") or MASK in (parts.username or ""):
        raise ChannelRefused("url", f"This URL holds the masked password {MASK}; type the password again.")
    reachable(parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme])
    return url.strip(), masked_url(url.strip())


def apprise_url(url: str) -> str:
    """The URL masked as Apprise shows it (tokens and passwords hidden), once Apprise has read it and its host
    (where it names one) is judged."""
    import apprise  # here, not at start-up: its plugins take ~0.2 s and ~15 MB to load (bench/startup.py)
    from apprise.manager_plugins import NotificationManager

    scheme = _parts(url).scheme.lower()
    if scheme not in NotificationManager().schemas():
        raise ChannelRefused(
            "url",
            f"Apprise does not know the scheme {scheme or '(none)'}://; write a URL from "
            "https://github.com/caronc/apprise/wiki, e.g. slack://TokenA/TokenB/TokenC or msteams://….",
        )
    plugin = apprise.Apprise.instantiate(url.strip())
    if plugin is None:
        raise ChannelRefused(
            "url",
            f"Apprise knows {scheme}:// but cannot read this URL; check its parts against the {scheme} page of "
            "https://github.com/caronc/apprise/wiki.",
        )
    for host, port in hosts(plugin):
        reachable(host, port)
    masked: str = plugin.url(privacy=True)
    return masked
