"""The set page's form: the knee rule's two thresholds, in percent, asked for in the address
(?iops_growth=10&p99_growth=50) so that a sweep read under another rule can be linked to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from jobs.analysis import curves

# The thresholds a person may ask for, in percent: the bounds the API takes too (jobs/sets/api.py KNEE_LOW, KNEE_HIGH).
LEAST_PERCENT, MOST_PERCENT = 0.1, 1000.0
DEFAULTS = {"iops_growth": round(curves.IOPS_GROWTH * 100, 6), "p99_growth": round(curves.P99_GROWTH * 100, 6)}


class KneeRuleForm(forms.Form):
    iops_growth = forms.FloatField(
        label="IOPS growth under (%)",
        required=False,
        help_text="The knee is a point after which no point gives this much more IOPS …",
        widget=forms.NumberInput(attrs={"step": "any", "min": "0.1", "max": "1000", "inputmode": "decimal"}),
    )
    p99_growth = forms.FloatField(
        label="p99 growth over (%)",
        required=False,
        help_text="… and some point's p99 is more than this much higher.",
        widget=forms.NumberInput(attrs={"step": "any", "min": "0.1", "max": "1000", "inputmode": "decimal"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.fields:
            self.fields[name].error_messages["invalid"] = f"{self.fields[name].label}: give a number, such as 10."
        self.initial = {name: f"{value:g}" for name, value in DEFAULTS.items()}

    def clean_iops_growth(self) -> float | None:
        return self._percent("iops_growth")

    def clean_p99_growth(self) -> float | None:
        return self._percent("p99_growth")

    def _percent(self, name: str) -> float | None:
        value = self.cleaned_data.get(name)
        if value is not None and not LEAST_PERCENT <= value <= MOST_PERCENT:
            label = self.fields[name].label
            raise forms.ValidationError(
                f"{label}: a percentage from {LEAST_PERCENT:g} to {MOST_PERCENT:g}, not {value:g}; the default is "
                f"{DEFAULTS[name]:g}."
            )
        return value

    def rule(self) -> curves.Rule | None:
        """The rule asked for (a threshold left empty keeps its default); None when the default one, or when a
        value is bad (the form then says which)."""
        if not self.is_valid():
            return None
        iops = self.cleaned_data.get("iops_growth")
        p99 = self.cleaned_data.get("p99_growth")
        if iops is None and p99 is None:
            return None
        return curves.Rule(
            iops_growth=(iops if iops is not None else DEFAULTS["iops_growth"]) / 100,
            p99_growth=(p99 if p99 is not None else DEFAULTS["p99_growth"]) / 100,
        )

    def problems(self) -> str:
        return " ".join(str(error) for errors in self.errors.values() for error in errors)


def rule_form(query: Mapping[str, str]) -> KneeRuleForm:
    """The form bound to the address's thresholds, unbound (the default rule) when it asks for none."""
    asked = {name for name in ("iops_growth", "p99_growth") if str(query.get(name, "")).strip()}
    return KneeRuleForm(query if asked else None)
