"""Where a channel sends, checked where people type it (the channel form and the API): e-mail addresses, a webhook
URL (http or https only), an Apprise URL whose scheme Apprise knows. Each refusal names the field and the fix."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

MAX_ADDRESSES = 20


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


def webhook_url(url: str) -> str:
    parts = _parts(url)
    if parts.scheme not in ("http", "https"):
        raise ChannelRefused(
            "url",
            f"A webhook URL starts with https:// (or http://), not {parts.scheme or 'nothing'}:; "
            "for Slack, Teams and other services choose the Apprise kind.",
        )
    if not parts.hostname:
        raise ChannelRefused("url", "This webhook URL names no host; write it as https://hooks.example.com/benchweb.")
    return url.strip()


def apprise_url(url: str) -> str:
    """The URL masked as Apprise shows it (tokens and passwords hidden), once Apprise has read it."""
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
    masked: str = plugin.url(privacy=True)
    return masked
