"""The profile form, and copying a profile into a team."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q

from jobs import nesting
from jobs.disks.forms import SizeField
from jobs.models import Profile, Team
from jobs.models.names import name_taken
from jobs.tools import options, sweep_plan
from jobs.units import parse_micros, short_micros

# What the form offers when a steady-state criterion is picked (the help texts say why), per kind of metric.
SS_SUGGESTED = {
    "slope": {"ss_limit": "0.3%", "ss_dur_s": 30, "ss_ramp_s": 10},
    "band": {"ss_limit": "10%", "ss_dur_s": 30, "ss_ramp_s": 10},
}
SS_FIELDS = ("ss_metric", "ss_limit", "ss_dur_s", "ss_ramp_s")
# A sweep's axes as rows of the form: the field each varies and its values (jobs/tools/sweep_plan.py's syntax).
SWEEP_ROWS = tuple(range(1, sweep_plan.MAX_AXES + 1))
SWEEP_CHOICES = [
    ("", "—"),
    ("iodepth", "queue depth (fio iodepth)"),
    ("jobs", "jobs (fio numjobs) / processes (ndisk64 -M)"),
    ("block_size_bytes", "block size"),
    ("read_percent", "read share (%)"),
]
SLA_FIELDS = ("sla_percentile", "sla_target_us", "sla_max_runs", "sla_lowest_iops")


class LatencyField(forms.CharField):
    """A latency typed as 800us, 1ms or 1.5 ms (a bare number is µs), cleaned to whole µs."""

    def prepare_value(self, value: Any) -> Any:
        return short_micros(value) if isinstance(value, int) else value

    # Typed as text and cleaned to µs, unlike CharField's str.
    def to_python(self, value: Any) -> int | None:  # type: ignore[override]
        text = (super().to_python(value) or "").strip()
        if not text:
            return None
        try:
            return parse_micros(text)
        except ValueError as exc:
            raise ValidationError(f"Give a latency such as 800us, 1ms or 1.5ms, not {text!r}.") from exc


class ProfileForm(forms.ModelForm):
    block_size_bytes = SizeField(label="Block size", help_text="Bytes, or with k, M, G (1024-based): 4k, 64k, 1M.")
    size_bytes = SizeField(
        label="File size per job",
        required=False,
        help_text="fio size / ndisk64 -s, e.g. 4G. Needed for a directory; empty on a device means all of it.",
    )
    sla_target_us = LatencyField(
        label="Latency target",
        required=False,
        help_text="e.g. 1ms or 500us. Set, the profile is a latency-target search: the most IOPS whose percentile "
        "stays at most this, found by capping fio's rate run after run. Empty: not a search.",
    )
    ioengine = forms.ChoiceField(label="I/O engine", choices=[(name, name) for name in sorted(options.IOENGINES)])
    extra_options = forms.CharField(
        label="Extra fio options",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="One per line, name=value, e.g. norandommap=1. Only allow-listed options: benchweb chooses files, "
        "logs and output itself.",
    )

    class Meta:
        model = Profile
        fields = [
            "name",
            "description",
            "tool",
            "rw",
            "pattern",
            "read_percent",
            "block_size_bytes",
            "iodepth",
            "jobs",
            "runtime_s",
            "ramp_time_s",
            "time_based",
            "direct",
            "size_bytes",
            "ioengine",
            "extra_options",
            *SS_FIELDS,
            "precondition",
            "precondition_passes",
            "pin_queue_cpus",
            "sweep_axes",
            "sweep_on_failure",
            *SLA_FIELDS,
        ]
        labels = {
            "rw": "Access pattern (fio rw)",
            "pattern": "Access pattern (ndisk64)",
            "read_percent": "Reads (%)",
            "iodepth": "Queue depth (iodepth)",
            "jobs": "Jobs / processes",
            "runtime_s": "Runtime (seconds)",
            "ramp_time_s": "Ramp time (seconds)",
            "time_based": "Time based: run for the whole runtime",
            "direct": "Direct I/O (bypass the page cache)",
            "ss_metric": "Steady-state criterion (fio ss)",
            "ss_limit": "Limit",
            "ss_dur_s": "Window (seconds, ss_dur)",
            "ss_ramp_s": "Wait before looking (seconds, ss_ramp)",
            "precondition": "Precondition",
            "precondition_passes": "Fill passes",
            "pin_queue_cpus": "Pin fio jobs to the queue CPUs (the ESSD PL3 recipe)",
            "sweep_axes": "Sweep axes",
            "sweep_on_failure": "When a point fails",
            "sla_percentile": "Percentile held to the target",
            "sla_max_runs": "Most runs",
            "sla_lowest_iops": "Lowest rate (IOPS)",
        }
        help_texts = {
            "read_percent": "For mixed fio patterns (rwmixread) and for ndisk64 -r.",
            "direct": "Without it the page cache can inflate results thirty times.",
            "ss_metric": "fio stops the job once this holds over the window, and the run is stamped steady (or not "
            "steady when the runtime ends first). iops_slope is the usual pick: the least-squares IOPS line, whose "
            "slope must stay under the limit. Empty: fio does not look, and benchweb judges the per-second samples "
            "itself (SNIA PTS rule).",
            "ss_limit": "A share of the window's mean (0.3%) or a value in the metric's unit. Suggested 0.3% for a "
            "slope: over a 30 s window the fitted line then moves at most 9 %, inside SNIA PTS's 10 % slope "
            "excursion; 10% for a band (every second within 10 % of the mean, SNIA's 20 % range).",
            "ss_dur_s": "Suggested 30: long enough to even out per-second jitter, short enough to fit a 60 s run. "
            "The ss ramp plus the window must end before the runtime.",
            "ss_ramp_s": "Suggested 10: the first seconds (caches warming, queues filling) are not looked at.",
            "precondition": "Fresh blocks of a thin-provisioned or cloud volume read faster than written ones. A "
            "fill writes the whole block device (or the run's test files) first, so it counts as a write: on a block "
            "device it needs “Allow destructive writes”.",
            "precondition_passes": "How many times the fill writes the target (1 to 4), in 1 MiB blocks.",
            "pin_queue_cpus": "fio's cpus_allowed (split: one job per CPU) set to the CPUs serving the device's blk-mq "
            "queues, read from sysfs at launch; refused when jobs exceed them. Wants rq_affinity=2: set on a host "
            "marked tunable, otherwise the run shows the command.",
        }
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "ss_limit": forms.TextInput(attrs={"placeholder": "0.3%", "spellcheck": "false"}),
            "ss_dur_s": forms.NumberInput(attrs={"placeholder": "30"}),
            "ss_ramp_s": forms.NumberInput(attrs={"placeholder": "10"}),
            # The axes are typed in the rows below (sweep_field_N, sweep_values_N); this field carries their errors.
            "sweep_axes": forms.HiddenInput,
            "sweep_on_failure": forms.RadioSelect,
        }

    # The suggestions the page's script fills in when a criterion is picked and its settings are empty.
    ss_suggested_json = json.dumps(SS_SUGGESTED)

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for row in SWEEP_ROWS:
            self.fields[f"sweep_field_{row}"] = forms.ChoiceField(
                label=f"Axis {row}: field", choices=SWEEP_CHOICES, required=False
            )
            self.fields[f"sweep_values_{row}"] = forms.CharField(
                label=f"Axis {row}: values",
                required=False,
                max_length=200,
                widget=forms.TextInput(
                    attrs={"placeholder": "1-256 x2" if row == 1 else "4k,64k", "spellcheck": "false"}
                ),
            )
        self.fields["sweep_axes"].required = False
        # A form without it (an older page, a script) keeps the default, as with the fill passes.
        self.fields["sweep_on_failure"].required = False
        self.team = team
        self.instance.team = team
        # The passes matter only with a fill; a form without them (an older page, a script) keeps the default.
        self.fields["precondition_passes"].required = False
        self.fields["sla_max_runs"].required = False
        self.fields["sla_percentile"].required = False
        cast(forms.ChoiceField, self.fields["precondition"]).choices = [
            ("", "none: measure the target as it is"),
            ("fill", "fill: write the whole target first"),
        ]
        if not self.is_bound:
            extras = self.instance.extra_options or {}
            self.initial["extra_options"] = "\n".join(f"{name}={value}" for name, value in extras.items())
            axes = self.instance.sweep_axes if isinstance(self.instance.sweep_axes, dict) else {}
            for row, (field, values) in zip(SWEEP_ROWS, axes.items(), strict=False):
                self.initial[f"sweep_field_{row}"] = field
                self.initial[f"sweep_values_{row}"] = values

    def sweep_rows(self) -> list[tuple[forms.BoundField, forms.BoundField]]:
        return [(self[f"sweep_field_{row}"], self[f"sweep_values_{row}"]) for row in SWEEP_ROWS]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("tool") == Profile.Tool.NDISK64:
            # The steady-state fields are fio's and hidden for ndisk64: what they still hold is not the user's intent.
            for name in SS_FIELDS:
                cleaned[name] = "" if name in ("ss_metric", "ss_limit") else None
                self.errors.pop(name, None)
            cleaned["sla_target_us"] = None  # a search is fio's (its rate cap); the field is hidden for ndisk64
            self.errors.pop("sla_target_us", None)
        axes = self._sweep_axes()
        if "sweep_axes" not in self.errors:
            cleaned["sweep_axes"] = axes
        for name, default in (
            ("sla_max_runs", Profile.SLA_MAX_RUNS_DEFAULT),
            ("sla_percentile", Profile.SLA_PERCENTILE_DEFAULT),
        ):
            if not cleaned.get(name):
                cleaned[name] = default
        return cleaned

    def _sweep_axes(self) -> dict[str, str]:
        """The rows as Profile.sweep_axes: field -> values, in the order of the rows (the first outer). Profile.clean
        then plans the sweep and names what it cannot run."""
        axes: dict[str, str] = {}
        for row in SWEEP_ROWS:
            field = self.cleaned_data.get(f"sweep_field_{row}") or ""
            values = (self.cleaned_data.get(f"sweep_values_{row}") or "").strip()
            if values and not field:
                self.add_error("sweep_axes", f"Axis {row}: choose the field its values {values!r} are for.")
            elif field in axes:
                self.add_error("sweep_axes", f"Axis {row}: {field} is axis 1 already; a sweep varies a field once.")
            elif field and not values:
                self.add_error("sweep_axes", f"Axis {row}: give the values of {field}, e.g. 1,4,16 or 1-256 x2.")
            elif field:
                axes[field] = values
        return axes

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if name_taken(Profile.objects.filter(Q(team=self.team) | Q(team__isnull=True)), self.instance, name=name):
            raise ValidationError(f"A profile named {name!r} exists already (yours or a preset); choose another name.")
        return name

    def clean_sweep_on_failure(self) -> str:
        return self.cleaned_data.get("sweep_on_failure") or Profile._meta.get_field("sweep_on_failure").get_default()

    def clean_precondition_passes(self) -> int:
        passes = self.cleaned_data.get("precondition_passes")
        return passes if passes is not None else Profile._meta.get_field("precondition_passes").get_default()

    def clean_extra_options(self) -> dict[str, str]:
        if self.cleaned_data.get("tool") == Profile.Tool.NDISK64:
            return {}  # the field is fio's and hidden for ndisk64; what it still holds is not the user's intent
        text = self.cleaned_data.get("extra_options", "").strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"This JSON does not parse ({exc.msg}); or write one name=value per line."
                ) from exc
            except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits; nesting past ~1,000 levels
                raise ValidationError(
                    "This JSON cannot be read (nested too deeply or a number too long); write one name=value per "
                    "line, e.g. norandommap=1."
                ) from exc
            if not isinstance(parsed, dict) or nesting.nests_too_deep(parsed, 2):
                raise ValidationError("Give one name=value per line, e.g. norandommap=1.")
            return parsed
        extras: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep or not name.strip():
                raise ValidationError(f"Line {number} ({line.strip()!r}) is not name=value; write e.g. norandommap=1.")
            extras[name.strip()] = value.strip()
        return extras


def unsaved_copy(source: Profile, team: Team) -> Profile:
    """A team's own copy of a preset or of one of its profiles, under a free name, not saved: the copy form
    shows it, and only its Save stores it (Cancel leaves nothing behind)."""
    names = set(Profile.objects.filter(Q(team=team) | Q(team__isnull=True)).values_list("name", flat=True))
    number, name = 1, f"{source.name} (copy)"
    while name in names:
        number += 1
        name = f"{source.name} (copy {number})"
    fields = {f.name: getattr(source, f.name) for f in Profile._meta.concrete_fields if f.name not in {"id", "team"}}
    return Profile(**(fields | {"name": name[:100], "team": team, "builtin": False}))
