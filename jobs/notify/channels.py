"""Adding and changing a channel, the one rule the channel form and the API both call: the target checked for
the channel's kind (jobs/notify/targets.py: where it sends, and whether benchweb may send there), a name unique in
the team, a new webhook's signing secret made."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from jobs.models import AlertChannel, Team
from jobs.models.names import name_taken
from jobs.notify import targets
from jobs.notify.targets import ChannelRefused

__all__ = ["ChannelInput", "ChannelRefused", "rotate_secret", "save_channel"]
Kind = AlertChannel.Kind


@dataclass(frozen=True)
class ChannelInput:
    """What a person gave; None is "not given" (a PATCH changes only what it names)."""

    kind: str | None = None
    name: str | None = None
    url: str | None = None
    addresses: list[str] | None = None
    events: list[str] | None = None
    kinds: list[str] | None = None
    enabled: bool | None = None


def save_channel(
    channel: AlertChannel | None, entered: ChannelInput, *, team: Team, user: Any
) -> tuple[AlertChannel, str | None]:
    """The channel saved, and a new webhook's signing secret (to show once), else None."""
    creating = channel is None
    if channel is None:
        if not entered.kind:
            raise ChannelRefused("kind", "Choose the kind of channel: email, webhook or apprise.")
        channel = AlertChannel(team=team, kind=entered.kind, created_by=user)
    elif entered.kind and entered.kind != channel.kind:
        raise ChannelRefused(
            "kind", f"This is a {channel.kind} channel and stays one; add a {entered.kind} channel and delete this one."
        )
    _set_target(channel, entered, creating)
    _set_name(channel, entered.name, creating)
    if entered.events is not None:
        channel.events = sorted(set(entered.events))
    if entered.kinds is not None:
        channel.kinds = sorted(set(entered.kinds))
    if entered.enabled is not None:
        channel.enabled = entered.enabled
    secret = _new_secret(channel) if creating and channel.kind == Kind.WEBHOOK else None
    channel.save()
    return channel, secret


def rotate_secret(channel: AlertChannel) -> str:
    """A new signing secret for a webhook, to show once; deliveries signed from now on use it."""
    if channel.kind != Kind.WEBHOOK:
        raise ChannelRefused("kind", f"Only a webhook channel has a signing secret; this one is {channel.kind}.")
    secret = _new_secret(channel)
    channel.save(update_fields=["secret_token"])
    return secret


def _new_secret(channel: AlertChannel) -> str:
    secret = secrets.token_urlsafe(32)
    channel.set_secret(secret)
    return secret


def _set_target(channel: AlertChannel, entered: ChannelInput, creating: bool) -> None:
    if channel.kind == Kind.EMAIL:
        if entered.url is not None:
            raise ChannelRefused("url", "An e-mail channel sends to addresses: give addresses, not url.")
        if creating or entered.addresses is not None:
            channel.target = targets.email_addresses(entered.addresses or [])
        return
    if entered.addresses is not None:
        raise ChannelRefused("addresses", f"A {channel.kind} channel sends to a URL: give url, not addresses.")
    if not (creating or entered.url is not None):
        return
    if not entered.url:
        example = (
            "https://hooks.example.com/benchweb" if channel.kind == Kind.WEBHOOK else "slack://TokenA/TokenB/TokenC"
        )
        raise ChannelRefused("url", f"Give the {channel.kind} URL, e.g. {example}.")
    if channel.kind == Kind.WEBHOOK:
        if not creating and entered.url.strip() == channel.target:
            return  # the edit form gives the stored URL back as shown, its password masked: nothing changed
        channel.set_url(*targets.webhook_url(entered.url))
    else:
        channel.set_url(entered.url.strip(), targets.apprise_url(entered.url))


def _set_name(channel: AlertChannel, name: str | None, creating: bool) -> None:
    if name is None and not creating:
        return
    wanted = (name or "").strip()
    others = AlertChannel.objects.filter(team=channel.team)
    if wanted:
        if name_taken(others, channel, name=wanted):
            raise ChannelRefused("name", f"Your team already has a channel named {wanted!r}; choose another name.")
        channel.name = wanted
        return
    base, number = _made_name(channel)[:90], 1
    channel.name = base
    while name_taken(others, channel, name=channel.name):
        number += 1
        channel.name = f"{base} {number}"


def _made_name(channel: AlertChannel) -> str:
    if channel.kind == Kind.EMAIL:
        return f"E-mail to {channel.addresses[0]}"
    if channel.kind == Kind.WEBHOOK:
        return f"Webhook to {urlsplit(channel.target).hostname}"
    return f"{urlsplit(channel.target).scheme} via Apprise"
