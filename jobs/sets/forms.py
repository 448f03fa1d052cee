"""The set pages' forms: the knee rule's two thresholds, in percent, asked for in the address
(?iops_growth=10&p99_growth=50) so that a sweep read under another rule can be linked to; and the form that starts a
synchronised group, or a group-size sweep over its disks."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, cast

from django import forms
from django.db.models import Q

from jobs import presets
from jobs.analysis import curves
from jobs.models import Disk, Profile, RunSet, Team
from jobs.runs.queueing import RunRefused
from jobs.sets import requesting

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


class GroupForm(forms.Form):
    """A synchronised group asked for on the page: one single-run profile on 2 to 100 of the team's disks, chosen
    from a list grouped by host (the members in the order listed: by host, then label), and the backend's optional
    caps; or, ticked as a group-size sweep, the group of the first k disks for each of its sizes. The refusals
    (requesting.group_problem, group_sizes_problem) go on the field they blame, naming the member and the fix."""

    profile = forms.ModelChoiceField(
        queryset=Profile.objects.none(),
        help_text="Your team's profiles and the built-in ones that are a single run (a sweep or a latency-target "
        "search cannot run as a group).",
    )
    disks = forms.TypedMultipleChoiceField(
        coerce=int,
        label="Disks",
        help_text=f"{requesting.GROUP_MIN_MEMBERS} to {requesting.GROUP_MAX_MEMBERS}, on different hosts or several "
        "of one host; each disk is one member, all started at one instant.",
    )
    cap_iops = forms.FloatField(
        label="Backend cap (IOPS)",
        required=False,
        help_text="Optional: what the shared backend gives at most where your team knows it, e.g. a cluster's QoS "
        "total.",
        widget=forms.NumberInput(attrs={"step": "any", "min": "0", "inputmode": "decimal"}),
    )
    cap_mb_s = forms.FloatField(
        label="Backend cap (MB/s)",
        required=False,
        help_text="Optional, likewise, in MB/s (10⁶ bytes a second).",
        widget=forms.NumberInput(attrs={"step": "any", "min": "0", "inputmode": "decimal"}),
    )

    by_fio = forms.BooleanField(
        label="Started by fio's client/server mode",
        required=False,
        help_text="Instead of each host waiting for one shared start instant (measured), fio's server runs on each "
        "member behind the same safety checks and fio's client on a worker starts them; the worker needs the "
        "members' fio release. A group only.",
    )
    as_sizes = forms.BooleanField(
        label="As a group-size sweep (1, 2, 4, … members)",
        required=False,
        help_text="Run the group of the first member, then of the first 2, 4, … and of all the disks ticked, one size "
        "after another, to see where adding members stops adding IOPS.",
    )
    sizes = forms.CharField(
        label="Group sizes",
        required=False,
        max_length=400,
        help_text="Optional, with a group-size sweep: the sizes, growing, the last the number of disks ticked, e.g. "
        "1,2,3. Empty: 1, 2, 4, … ending at the number of disks.",
        widget=forms.TextInput(attrs={"placeholder": "1,2,4", "inputmode": "numeric", "autocomplete": "off"}),
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        profiles = Profile.objects.filter(Q(team=team) | Q(team__isnull=True))
        single = [profile.pk for profile in profiles if not profile.is_set]
        cast("forms.ModelChoiceField[Profile]", self.fields["profile"]).queryset = profiles.filter(
            pk__in=single
        ).order_by("name")
        if not self.initial.get("profile"):
            # As Run now starts: on the built-in quick check.
            self.initial["profile"] = (
                profiles.filter(team=None, name=presets.QUICK_CHECK).values_list("pk", flat=True).first()
            )
        self.team_disks = list(Disk.objects.filter(team=team).select_related("host").order_by("host__name", "label"))
        disks = cast("forms.TypedMultipleChoiceField", self.fields["disks"])
        disks.choices = [
            (host.name, [(disk.pk, disk.label) for disk in members])
            for host, members in itertools.groupby(self.team_disks, key=lambda disk: disk.host)
        ]

    def by_host(self) -> list[tuple[str, list[tuple[Disk, bool]]]]:
        """The team's disks by host, in the order listed, each with whether it is ticked: the page's checkboxes."""
        ticked = {str(value) for value in self["disks"].value() or []}
        return [
            (host.name, [(disk, str(disk.pk) in ticked) for disk in disks])
            for host, disks in itertools.groupby(self.team_disks, key=lambda disk: disk.host)
        ]

    def chosen_disks(self) -> list[Disk]:
        """The disks ticked, in the order listed (the members' order)."""
        ticked = set(self.cleaned_data.get("disks") or [])
        return [disk for disk in self.team_disks if disk.pk in ticked]

    def clean_sizes(self) -> list[int] | None:
        """The sizes typed ("1, 2, 3"), or None when left empty; a part that is not a whole number is refused."""
        text = self.cleaned_data.get("sizes", "").strip()
        if not text:
            return None
        parts = [part.strip() for part in text.split(",")]
        if not all(part.isascii() and part.isdigit() for part in parts):
            raise forms.ValidationError(
                f"Group sizes: give whole numbers of members separated by commas, e.g. 1,2,4; not {text[:40]!r}."
            )
        return [int(part) for part in parts]

    def clean(self) -> dict[str, Any]:
        """Sizes go only with a group-size sweep, and a sweep takes no backend cap: each refused on its field."""
        cleaned = super().clean() or {}
        if cleaned.get("as_sizes"):
            if cleaned.get("by_fio"):
                self.add_error("by_fio", "A group-size sweep is started by benchweb: untick fio's mode, or the sweep.")
            for name in requesting.GROUP_CAPS:
                if cleaned.get(name) is not None:
                    self.add_error(
                        name, "A group-size sweep takes no backend cap: leave it empty, or untick the sweep."
                    )
        elif cleaned.get("sizes") is not None:
            self.add_error("sizes", "Group sizes go with a group-size sweep: tick it above, or leave the sizes empty.")
        return cleaned

    def synchronised_by(self) -> str:
        return RunSet.BY_FIO if self.cleaned_data.get("by_fio") else "benchweb"

    def caps(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in requesting.GROUP_CAPS}

    def refuse(self, refused: RunRefused) -> None:
        """A use case's refusal on the field it names (the whole form when it names none of them)."""
        self.add_error(refused.field if refused.field in self.fields else None, str(refused))
