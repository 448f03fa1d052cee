"""The alert rules form: one per kind, each with only the setting its kind has."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import Alert, AlertRule

# The one setting each kind takes beyond on and off.
SETTING = {
    Alert.Kind.BELOW_PROMISE: "consecutive_runs",
    Alert.Kind.STALE: "intervals",
    Alert.Kind.GROUP_BELOW_PROMISE: "promise_percent",
    Alert.Kind.GROUP_SPREAD: "spread_percent",
}
SETTINGS = ("consecutive_runs", "intervals", "promise_percent", "spread_percent")
# Settings a form may leave out and keep as they are: the group kinds came later than the forms scripts post.
KEPT_WHEN_MISSING = ("promise_percent", "spread_percent")


class AlertRuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ["enabled", *SETTINGS]
        labels = {"enabled": "On", "consecutive_runs": "Runs in a row", "intervals": "Intervals",
                  "promise_percent": "% of the limit", "spread_percent": "Spread above %"}  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        setting = SETTING.get(Alert.Kind(self.instance.kind))
        for name in SETTINGS:
            if name != setting:
                del self.fields[name]
            elif name in KEPT_WHEN_MISSING and self.is_bound and self.add_prefix(name) not in self.data:
                self.fields[name].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in KEPT_WHEN_MISSING:
            if name in self.fields and cleaned.get(name) is None:
                cleaned[name] = getattr(self.instance, name)
        return cleaned


def rule_forms(team_id: int, data: Any = None) -> list[AlertRuleForm]:
    return [AlertRuleForm(data, instance=rule, prefix=kind) for kind, rule in AlertRule.for_team(team_id).items()]
