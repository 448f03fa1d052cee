"""The annotation form of the Changes page and the disk page."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.utils import timezone

from jobs.models import Annotation, Disk, Host, Team
from jobs.widgets import MomentInput


class AnnotationForm(forms.ModelForm):
    class Meta:
        model = Annotation
        fields = ["at", "text", "disk", "host"]
        labels = {"at": "When", "text": "What happened", "disk": "Disk", "host": "Host"}
        widgets = {"at": MomentInput()}

    def __init__(
        self, *args: Any, team: Team, disk: Disk | None = None, host: Host | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.instance.team = team
        disks = cast("forms.ModelChoiceField[Disk]", self.fields["disk"])
        disks.queryset = Disk.objects.filter(team=team).select_related("host")
        disks.empty_label = "— every disk of the host, or of the team —"
        hosts = cast("forms.ModelChoiceField[Host]", self.fields["host"])
        hosts.queryset = Host.objects.filter(team=team)
        hosts.empty_label = "— any host —"
        hosts.help_text = "A host without a disk: the note shows on every disk of it. Neither: on every disk."
        # A typed date and time (jobs.widgets) is read in the reader's zone (jobs.middleware activates it); say which.
        self.fields["at"].help_text = f"In your time zone, {timezone.get_current_timezone()}."
        # A disk's or a host's page offers that host and its disks: a note there is about them (or the team, with
        # neither). Every disk of the team was one <option> each, most of a disk page's CPU with 200 disks; the
        # Changes page, where notes are posted, still takes any of the team's.
        if disk is not None:
            host = host or disk.host
            self.initial.setdefault("disk", disk.pk)
        if host is not None:
            disks.queryset = disks.queryset.filter(host=host)
            hosts.queryset = hosts.queryset.filter(pk=host.pk)
            if disk is None:
                self.initial.setdefault("host", host.pk)
        self.initial.setdefault("at", timezone.localtime().replace(second=0, microsecond=0))
