"""The channel forms of the Alert channels page: one per kind (the kind is fixed by the form it is typed in), and
the edit form of a channel page, which leaves an Apprise URL as it is unless a new one is typed."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import AlertChannel
from jobs.models.channels import EVENTS, KINDS
from jobs.notify.channels import ChannelInput

Kind = AlertChannel.Kind
TARGET_HELP = {
    Kind.EMAIL: "One address per line (or separated by commas). Sent through the server's SMTP settings.",
    Kind.WEBHOOK: "benchweb POSTs each alert as JSON, signed with a secret shown once after you add it. A "
    "user:password@ in the URL is stored encrypted and shown masked.",
    Kind.APPRISE: "e.g. slack://TokenA/TokenB/TokenC, msteams://…, discord://…, matrixs://…, pagerduty://…; "
    "stored encrypted and shown masked.",
}


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="Left empty: made from where it sends.")
    addresses = forms.CharField(label="E-mail addresses", widget=forms.Textarea(attrs={"rows": 2}), required=False)
    url = forms.CharField(label="URL", max_length=2000, required=False)
    events = forms.MultipleChoiceField(
        label="Events", choices=[(e, e) for e in EVENTS], required=False, widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every event.",
    )  # fmt: skip
    kinds = forms.MultipleChoiceField(
        label="Alert kinds", choices=[(k, k.replace("_", " ")) for k in KINDS], required=False,
        widget=forms.CheckboxSelectMultiple, help_text="None ticked: every kind.",
    )  # fmt: skip
    enabled = forms.BooleanField(required=False, initial=True, label="Enabled")

    def __init__(self, *args: Any, kind: str, channel: AlertChannel | None = None, **kwargs: Any) -> None:
        if channel is not None:
            kwargs.setdefault("initial", {
                "name": channel.name, "addresses": "\n".join(channel.addresses),
                "url": channel.target if kind == Kind.WEBHOOK else "",
                "events": channel.events, "kinds": channel.kinds, "enabled": channel.enabled,
            })  # fmt: skip
        if channel is None:
            kwargs.setdefault("prefix", kind)  # a form per kind on one page: their fields' names and ids differ
        super().__init__(*args, **kwargs)
        self.kind, self.channel = kind, channel
        del self.fields["url" if kind == Kind.EMAIL else "addresses"]
        target = "addresses" if kind == Kind.EMAIL else "url"
        self.fields[target].help_text = TARGET_HELP[Kind(kind)]
        if kind == Kind.WEBHOOK:
            self.fields["url"].widget.attrs["placeholder"] = "https://hooks.example.com/benchweb"
        if kind == Kind.APPRISE:
            self.fields["url"].label = "Apprise URL"
            if channel is not None:
                self.fields["url"].help_text = f"Stored: {channel.target}. Left empty: kept as it is."
        self.fields["url" if kind != Kind.EMAIL else "addresses"].required = channel is None

    @property
    def kind_label(self) -> str:
        return Kind(self.kind).label

    def entered(self) -> ChannelInput:
        data = self.cleaned_data
        url = data.get("url")
        if self.kind == Kind.APPRISE and self.channel is not None and not url:
            url = None  # an empty box keeps the stored Apprise URL
        addresses = data.get("addresses") if self.kind == Kind.EMAIL else None
        return ChannelInput(
            kind=self.kind, name=data.get("name", ""),
            url=url if self.kind != Kind.EMAIL else None,
            addresses=addresses.replace(",", "\n").split() if addresses is not None else None,
            events=data.get("events", []), kinds=data.get("kinds", []), enabled=data.get("enabled", False),
        )  # fmt: skip
