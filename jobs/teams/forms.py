"""Forms of the account pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm

from jobs import clock, units
from jobs.models import Membership, Preferences, Team


class SignupForm(UserCreationForm):
    """Django's sign-up with an optional email address: invitations sent to it wait for the new account."""

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
        help_texts = {"email": "Optional. An invitation to a team sent to this address waits for you."}


class AddMemberForm(forms.Form):
    user = forms.CharField(
        label="Username or email", max_length=254, help_text="They join once they accept the invitation."
    )
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class NewTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. 'nightly CI'.")
    days = forms.IntegerField(
        label="Expires after (days)", required=False, min_value=1, max_value=3650,
        help_text="Empty: never (revoke it when you no longer need it).",
    )  # fmt: skip


class PreferencesForm(forms.ModelForm):
    """A person's time zone: an IANA name, or empty for the browser's."""

    class Meta:
        model = Preferences
        fields = ("time_zone",)
        labels = {"time_zone": "Time zone"}

    def __init__(self, *args: Any, browser_zone: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        browser = (
            f"Browser's zone (currently {browser_zone})"
            if browser_zone
            else "Browser's zone (UTC until it reports one)"
        )
        self.fields["time_zone"].widget = forms.Select(choices=[("", browser), *((n, n) for n in clock.zone_names())])
        self.fields["time_zone"].help_text = "Every time on every page, chart and calendar is shown in this zone."

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"]
        if name and clock.zone_or_none(name) is None:
            raise forms.ValidationError(
                f"{name!r} is not a time zone this server knows; pick one from the list, e.g. Europe/Berlin."
            )
        return name


class TeamSettingsForm(forms.ModelForm):
    """The team's own settings: the longest a sweep may take, typed in minutes and stored in seconds."""

    sweep_bound_minutes = forms.IntegerField(
        label="Longest sweep (minutes)",
        min_value=1,
        max_value=7 * 24 * 60,
        help_text="A sweep whose points × (ramp + runtime) take longer is refused before it starts, saying how it "
        "would fit. 240 minutes is 4 hours; at most 10,080 (a week).",
        error_messages={"min_value": "Longest sweep: at least 1 minute.", "max_value": "Longest sweep: at most "
                        "10,080 minutes (a week); split a longer sweep into several.",
                        "invalid": "Longest sweep: a whole number of minutes, such as 240."},
    )  # fmt: skip

    class Meta:
        model = Team
        fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sweep_bound_minutes"].initial = self.instance.sweep_bound_s // 60

    def save(self, commit: bool = True) -> Team:
        self.instance.sweep_bound_s = self.cleaned_data["sweep_bound_minutes"] * 60
        return super().save(commit)

    @property
    def bound_text(self) -> str:
        return units.format_duration(self.instance.sweep_bound_s)
