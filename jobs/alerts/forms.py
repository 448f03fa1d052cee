"""The alert rules form: one per kind, each with only the setting its kind has."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import Alert, AlertRule

# The one setting each kind takes beyond on and off.
SETTING = {Alert.Kind.BELOW_PROMISE: "consecutive_runs", Alert.Kind.STALE: "intervals"}


class AlertRuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ["enabled", "consecutive_runs", "intervals"]
        labels = {"enabled": "On", "consecutive_runs": "Runs in a row", "intervals": "Intervals"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        setting = SETTING.get(Alert.Kind(self.instance.kind))
        for name in ("consecutive_runs", "intervals"):
            if name != setting:
                del self.fields[name]


def rule_forms(team_id: int, data: Any = None) -> list[AlertRuleForm]:
    return [AlertRuleForm(data, instance=rule, prefix=kind) for kind, rule in AlertRule.for_team(team_id).items()]
