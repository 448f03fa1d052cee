"""The schedule form."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs import scheduling
from jobs.models import Disk, Profile, Schedule, ScheduleProfile, Team
from jobs.schedules import dispatcher
from jobs.widgets import MomentInput


class ScheduleForm(forms.ModelForm):
    """A schedule with its targets and up to four profiles run one after another on each target."""

    PROFILE_SLOTS = 4

    targets = forms.ModelMultipleChoiceField(queryset=Disk.objects.none(), widget=forms.CheckboxSelectMultiple)
    blackouts = forms.CharField(
        label="Daily blackouts",
        required=False,
        help_text="Local times with no runs, comma-separated, e.g. 08:00-18:00, 22:00-06:00.",
    )

    class Meta:
        model = Schedule
        fields = [
            "name", "kind", "cron", "interval_minutes", "starts_at", "timezone", "window_start", "window_end",
            "stagger_s", "auto_stagger", "auto_stagger_by_site", "blackouts", "misfire_grace_s", "enabled", "targets",
            "as_group",
        ]  # fmt: skip
        labels = {
            "stagger_s": "Stagger (seconds)",
            "misfire_grace_s": "Misfire grace (seconds)",
            "interval_minutes": "Every N minutes",
            "auto_stagger_by_site": "Auto-stagger by site",
            "auto_stagger": "Auto-stagger",
            "timezone": "Time zone",
            "as_group": "Run as a group",
        }
        widgets = {
            "starts_at": MomentInput(),
            "window_start": MomentInput(),
            "window_end": MomentInput(),
        }

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.instance.team = team
        targets_field = cast("forms.ModelMultipleChoiceField[Disk]", self.fields["targets"])
        targets_field.queryset = Disk.objects.filter(team=team).select_related("host")
        profiles = Profile.objects.filter(Q(team=team) | Q(team__isnull=True))
        chosen = list(self.instance.scheduleprofile_set.order_by("position")) if self.instance.pk else []
        for slot in range(self.PROFILE_SLOTS):
            self.fields[f"profile_{slot}"] = forms.ModelChoiceField(
                queryset=profiles,
                required=slot == 0,
                label=f"Profile {slot + 1}" + (" (then)" if slot else ""),
                initial=chosen[slot].profile_id if slot < len(chosen) else None,
            )
        if self.instance.pk:
            self.initial["blackouts"] = ", ".join(self.instance.blackouts or [])
        # A typed date and time (jobs.widgets) is read in the reader's zone (jobs.middleware activates it); say which.
        zone = timezone.get_current_timezone()
        for name in ("starts_at", "window_start", "window_end"):
            field = self.fields[name]
            field.help_text = " ".join(filter(None, [str(field.help_text), f"In your time zone, {zone}."]))

    def chosen_profiles(self) -> list[Profile]:
        picked = [self.cleaned_data.get(f"profile_{slot}") for slot in range(self.PROFILE_SLOTS)]
        return [profile for profile in picked if profile is not None]

    def clean_blackouts(self) -> list[str]:
        text = self.cleaned_data.get("blackouts") or ""
        return [part.strip() for part in text.split(",") if part.strip()]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        profiles = self.chosen_profiles()
        if len({p.pk for p in profiles}) != len(profiles):
            self.add_error("profile_1", "Each profile can appear once in a schedule; remove the repeat.")
        targets = cleaned.get("targets") or []
        if self.errors:
            return cleaned
        rule_fields = ("kind", "cron", "interval_minutes", "starts_at", "timezone", "window_start", "window_end")
        rule = Schedule(**{f: cleaned.get(f) for f in rule_fields}, blackouts=cleaned.get("blackouts") or []).rule()
        sequence = dispatcher.sequence_seconds(profiles)
        stagger = 0 if cleaned.get("auto_stagger") else cleaned.get("stagger_s") or 0
        for field, message in scheduling.validate(rule, stagger_s=stagger, n_targets=len(targets),
                                                  sequence_s=sequence).items():  # fmt: skip
            self.add_error(field if field in self.fields else None, message)
        draft = Schedule(as_group=bool(cleaned.get("as_group")), stagger_s=cleaned.get("stagger_s") or 0,
                         auto_stagger=bool(cleaned.get("auto_stagger")))  # fmt: skip
        if problems := dispatcher.group_problems(draft, list(targets), profiles):
            for field, messages in problems.items():
                self.add_error("profile_0" if field == "profiles" else field, messages)
            return cleaned
        for message in dispatcher.unrunnable(list(targets), profiles):
            self.add_error("targets", f"{message} Remove the disk or the profile from this schedule.")
        return cleaned

    def save(self, commit: bool = True) -> Schedule:
        """commit=False (the live preview) builds the schedule without touching the database."""
        schedule = super().save(commit=False)
        if commit:
            with transaction.atomic():
                schedule.save()
                self.save_m2m()
                schedule.scheduleprofile_set.all().delete()
                ScheduleProfile.objects.bulk_create(
                    ScheduleProfile(schedule=schedule, profile=profile, position=position)
                    for position, profile in enumerate(self.chosen_profiles())
                )
                if not schedule.enabled:
                    dispatcher.stop_unstarted(schedule)
        return schedule
