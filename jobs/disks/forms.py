"""The disk page's forms: the disk form (target, disk type and size, spec figures in the vendor's unit, the
destructive confirmation), Run now (the profiles that cannot run on the disk disabled, with the reason) and the
preconditioning recorded by hand."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q

from jobs import limits, presets
from jobs.models import Disk, Profile, Run
from jobs.models.names import name_taken
from jobs.runners import Unrunnable
from jobs.sets import facts as set_facts
from jobs.tools import sweep_plan
from jobs.units import parse_size, short_size
from jobs.widgets import MomentInput

THROUGHPUT_UNITS = {"MB/s": 10**6, "MiB/s": 2**20}


THROUGHPUT_FIELDS = ("spec_bytes_per_s", "spec_burst_bytes_per_s", "instance_bytes_per_s_cap")


def _disk_type_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for kind in limits.disk_types():
        groups.setdefault(kind.provider, []).append((kind.id, f"{kind.label} — {size_range(kind)}"))
    return list(groups.items())


def size_range(kind: limits.DiskType) -> str:
    if not kind.size_unit:
        return "no size"
    low = f"{kind.size_min:,g}" if kind.size_min is not None else None
    high = f"{kind.size_max:,g}" if kind.size_max is not None else None
    if low and high:
        return f"{low} to {high} {kind.size_unit}"
    if low or high:
        return f"from {low} {kind.size_unit}" if low else f"up to {high} {kind.size_unit}"
    return f"any size in {kind.size_unit}"


class DiskForm(forms.ModelForm):
    """A disk's target and spec. Throughput is typed in MB/s or MiB/s and stored in bytes per second."""

    disk_type = forms.ChoiceField(label="Disk type", choices=_disk_type_choices)
    throughput_unit = forms.ChoiceField(
        label="Throughput unit",
        choices=[("MB/s", "MB/s (10⁶ bytes)"), ("MiB/s", "MiB/s (2²⁰ bytes)")],
        help_text="For every throughput on this form, and the unit the disk page shows them in. Vendors differ: "
        "AWS quotes MiB/s, Alibaba MB/s.",
    )
    spec_bytes_per_s = forms.DecimalField(label="Throughput", required=False, min_value=0, decimal_places=3)
    spec_burst_bytes_per_s = forms.DecimalField(label="Burst throughput", required=False, min_value=0, decimal_places=3)
    instance_bytes_per_s_cap = forms.DecimalField(
        label="Instance throughput cap", required=False, min_value=0, decimal_places=3
    )
    confirm_destructive = forms.BooleanField(
        label="I understand that benchmarks will overwrite this device and destroy every byte on it", required=False
    )

    class Meta:
        model = Disk
        fields = [
            "label",
            "target_path",
            "kind",
            "disk_type",
            "size",
            "stripes",
            "spec_iops",
            "spec_bytes_per_s",
            "spec_burst_iops",
            "spec_burst_bytes_per_s",
            "instance_iops_cap",
            "instance_bytes_per_s_cap",
            "allow_destructive",
            "throughput_unit",
        ]
        labels = {
            "target_path": "Target path",
            "spec_iops": "IOPS",
            "spec_burst_iops": "Burst IOPS",
            "instance_iops_cap": "Instance IOPS cap",
            "allow_destructive": "Allow destructive writes (block devices only)",
        }
        help_texts = {
            "target_path": "A directory (benchweb writes test files in it) or a block device such as /dev/nvme1n1.",
            "size": "In the type's unit (see the type's range).",
            "spec_iops": "Provisioned IOPS for gp3, io1/io2, SolidFire…; the limit itself for custom.",
            "instance_iops_cap": "The VM's own limit, when it is lower than the disks'. Empty: none.",
            "allow_destructive": "Only a block device needs it: there write and mixed profiles overwrite the device, "
            "so they run only with this ticked. In a directory writes go to test files of benchweb's own, so a "
            "directory needs no switch; read profiles always run.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = [getattr(self.instance, name) for name in THROUGHPUT_FIELDS]
        # The unit the figures were typed in; for disks saved before it was kept, read from the figures.
        unit = self.instance.throughput_unit or limits.typed_unit(*stored)
        self.fields["throughput_unit"].initial = unit
        if not self.is_bound:
            self.initial["throughput_unit"] = unit
        for name, value in zip(THROUGHPUT_FIELDS, stored, strict=True):
            if value is not None:
                self.initial[name] = Decimal(value) / THROUGHPUT_UNITS[unit]

    def clean_label(self) -> str:
        label = self.cleaned_data["label"]
        if self.instance.host_id and name_taken(
            Disk.objects.filter(host_id=self.instance.host_id), self.instance, label=label
        ):
            raise ValidationError(f"This host already has a disk labelled {label!r}; choose another label.")
        return label

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        factor = THROUGHPUT_UNITS.get(cleaned.get("throughput_unit") or "", 10**6)
        for name in THROUGHPUT_FIELDS:
            if cleaned.get(name) is not None:
                cleaned[name] = round(cleaned[name] * factor)
        block, allow = cleaned.get("kind") == Disk.Kind.BLOCK, cleaned.get("allow_destructive")
        was = self.instance
        confirmed_before = (
            was.pk
            and was.allow_destructive
            and was.kind == Disk.Kind.BLOCK
            and was.target_path == cleaned.get("target_path")
        )
        if block and allow and not confirmed_before and not cleaned.get("confirm_destructive"):
            self.add_error(
                "confirm_destructive",
                f"Write profiles on {cleaned.get('target_path') or 'a block device'} destroy everything on it: tick "
                "this box to confirm, or untick “Allow destructive writes”.",
            )
        return cleaned


class SizeField(forms.CharField):
    """A byte count typed as 4096, 4k, 64KiB, 256M or 4G (1024-based)."""

    def prepare_value(self, value: Any) -> Any:
        return short_size(value) if isinstance(value, int) else value

    # A size is typed as text and cleaned to a byte count, unlike CharField's str.
    def to_python(self, value: Any) -> int | None:  # type: ignore[override]
        text = super().to_python(value)
        assert text is not None  # CharField gives its empty_value, "", for an empty value
        text = text.strip()
        if not text:
            return None
        try:
            return parse_size(text)
        except ValueError:
            raise ValidationError(f"Give a byte count such as 4096, 4k, 64k, 256M or 4G, not {text!r}.") from None


class ProfileSelect(forms.Select):
    """The profile choice, with the profiles that cannot run on this disk disabled and the reason in their label."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals: dict[str, str] = {}  # profile id -> the few words why it cannot run here
        self.plans: dict[str, str] = {}  # a sweep profile's id -> its points and time

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        if plan := self.plans.get(str(value)):
            option["label"] = f"{option['label']} — sweep: {plan}"
        if short := self.refusals.get(str(value)):
            option["label"] = f"{option['label']} — cannot run here: {short}"
            option["attrs"]["disabled"] = True
        return option


class RunNowForm(forms.Form):
    profile = forms.ModelChoiceField(queryset=Profile.objects.none(), empty_label=None, widget=ProfileSelect)

    def __init__(self, *args: Any, disk: Disk, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        profile_field = cast("forms.ModelChoiceField[Profile]", self.fields["profile"])
        profile_field.queryset = Profile.objects.filter(Q(team=disk.team) | Q(team__isnull=True))
        # Disk.refusal_for is the rule queueing.create_run refuses by: a choice disabled here is refused there.
        profiles = list(profile_field.queryset)
        refusals = {profile.pk: disk.refusal_for(profile) for profile in profiles}
        # A sweep the disk takes (every point: Disk.refusal_for) must also fit the team's bound, as Run now checks
        # (jobs/sets/requesting.py); the form says what each will do before it runs.
        self.sweeps: list[tuple[Profile, str, str]] = []
        for profile in profiles:
            if profile.is_sweep and refusals[profile.pk] is None:
                plan = profile.sweep()
                try:
                    sweep_plan.check_bound(plan, disk.team.sweep_bound_s)
                except sweep_plan.SweepError as exc:
                    refusals[profile.pk] = Unrunnable("profile", "longer than the team's bound on a sweep", str(exc))
                else:
                    axes = set_facts.plan_axes_words(plan.axes, profile.tool)
                    self.sweeps.append((profile, sweep_plan.plan_text(plan), axes))
        widget = cast(ProfileSelect, profile_field.widget)
        widget.refusals = {str(pk): refusal.short for pk, refusal in refusals.items() if refusal}
        widget.plans = {str(profile.pk): plan for profile, plan, _ in self.sweeps}
        runnable = [pk for pk, refusal in refusals.items() if refusal is None]
        self.runnable_count = len(runnable)
        self.refused = [(p.name, refusal.message) for p in profiles if (refusal := refusals[p.pk])]
        if not self.is_bound:
            self.initial["profile"] = default_profile(disk, runnable)


def default_profile(disk: Disk, runnable: list[int]) -> int | None:
    """The profile Run now starts with: the last one run on this disk if it can still run here, else the quick
    check, else the first that can run; None when none can."""
    last = (
        disk.runs.exclude(trigger=Run.Trigger.IMPORT).exclude(profile=None).values_list("profile_id", flat=True).first()
    )
    if last in runnable:
        return last
    quick = Profile.objects.filter(team=None, name=presets.QUICK_CHECK).values_list("pk", flat=True).first()
    if quick in runnable:
        return quick
    return runnable[0] if runnable else None


class PreconditionForm(forms.Form):
    """A preconditioning done outside benchweb (dd, a fill by another tool), recorded by hand. Its ids have a
    prefix of their own: the disk page also holds the note form, whose fields have the same names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "precondition_%s")
        super().__init__(*args, **kwargs)

    at = forms.DateTimeField(
        label="When",
        required=False,
        widget=MomentInput(),
        help_text="When the fill ended, in your time zone; empty: now.",
    )
    how = forms.CharField(
        label="How",
        max_length=300,
        widget=forms.TextInput(attrs={"placeholder": "dd if=/dev/zero bs=1M, twice"}),
        error_messages={"required": "say how the disk was filled, e.g. “dd if=/dev/zero bs=1M, twice”."},
    )
