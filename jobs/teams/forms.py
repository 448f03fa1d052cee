"""Forms of the account pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm

from jobs import clock, units
from jobs.analysis import verdicts
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


VERDICT_FIELD_PREFIX = "verdict_"


def _threshold_field(threshold: verdicts.Threshold) -> forms.FloatField:
    """One verdict threshold: empty keeps the default (and follows it if it changes); its range is checked by
    the verdicts module, whose sentence names the key and the fix."""
    default = f"{threshold.default:g} {threshold.unit}"
    return forms.FloatField(
        label=f"{threshold.label} ({threshold.unit})",
        required=False,
        help_text=f"{threshold.meaning} Default {default}; empty keeps the default. Key: {threshold.key}.",
        widget=forms.NumberInput(attrs={"step": "any", "placeholder": f"{threshold.default:g}"}),
        error_messages={"invalid": f"{threshold.key}: give a number, e.g. {threshold.default:g} (the default)."},
    )


class TeamSettingsForm(forms.ModelForm):
    """The team's own settings: the longest a sweep may take, typed in minutes and stored in seconds, and the
    thresholds of the verdict rules (docs/user-guide/verdicts.md), one field each."""

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
        own = self.instance.verdict_thresholds or {}
        for threshold in verdicts.THRESHOLDS:
            name = VERDICT_FIELD_PREFIX + threshold.key
            self.fields[name] = _threshold_field(threshold)
            self.fields[name].initial = own.get(threshold.key)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for key, problem in verdicts.threshold_problems(self.typed_thresholds()).items():
            self.add_error(VERDICT_FIELD_PREFIX + key, problem)
        return cleaned

    def typed_thresholds(self) -> dict[str, float]:
        """The thresholds typed in; an empty field is no value of the team's own."""
        values = ((t.key, self.cleaned_data.get(VERDICT_FIELD_PREFIX + t.key)) for t in verdicts.THRESHOLDS)
        return {key: value for key, value in values if value is not None}

    def save(self, commit: bool = True) -> Team:
        self.instance.sweep_bound_s = self.cleaned_data["sweep_bound_minutes"] * 60
        self.instance.verdict_thresholds = self.typed_thresholds()
        return super().save(commit)

    def verdict_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The threshold fields under the verdict each belongs to; the general ones first."""
        groups: dict[str, list[forms.BoundField]] = {}
        for threshold in verdicts.THRESHOLDS:
            title = verdicts.label(threshold.kind).capitalize() if threshold.kind else "Every rule"
            groups.setdefault(title, []).append(self[VERDICT_FIELD_PREFIX + threshold.key])
        return list(groups.items())

    @property
    def own_thresholds_text(self) -> str:
        count = len(self.instance.verdict_thresholds or {})
        if not count:
            return "every verdict threshold at its default"
        return f"{count} verdict threshold{'s' if count > 1 else ''} of its own (the others at their defaults)"

    @property
    def bound_text(self) -> str:
        return units.format_duration(self.instance.sweep_bound_s)
