from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from audit import log as audit
from audit.models import AuditEvent
from jobs.hosts.forms import CredentialForm
from jobs.metrics import tally
from jobs.models import (
    AlertChannel,
    ChangePoint,
    Credential,
    Delivery,
    Disk,
    Host,
    Membership,
    Profile,
    Run,
    RunResult,
    RunResultDay,
    RunSample,
    Schedule,
    ScheduleProfile,
    Team,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]


@admin.register(Credential)
class CredentialAdmin(admin.ModelAdmin):
    form = CredentialForm
    list_display = ["name", "kind", "team", "updated_at"]
    list_filter = ["kind", "team"]

    def save_model(self, request: HttpRequest, obj: Credential, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        action = AuditEvent.Action.CREDENTIAL_CHANGED if change else AuditEvent.Action.CREDENTIAL_CREATED
        audit.record(obj.team, request.user, action, obj, kind=obj.kind, fields=sorted(form.changed_data), via="admin")

    def delete_model(self, request: HttpRequest, obj: Credential) -> None:
        audit.record(obj.team, request.user, AuditEvent.Action.CREDENTIAL_DELETED, obj, kind=obj.kind, via="admin")
        super().delete_model(request, obj)


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ["name", "address", "port", "username", "site", "os", "host_key_fingerprint",
                    "scanned_key_fingerprint", "enabled", "team"]  # fmt: skip
    list_filter = ["os", "enabled", "team"]
    search_fields = ["name", "address"]
    # A pinned key changes only through scan + approve, never by typing.
    readonly_fields = ["host_key_type", "host_key_fingerprint", "host_key_approved_at", "host_key_approved_by",
                       "scanned_key_type", "scanned_key_fingerprint", "scanned_at"]  # fmt: skip
    exclude = ["host_key_b64"]
    actions = ["scan_host_key", "approve_scanned_key"]

    @admin.action(description="Scan host key (shows the fingerprint to compare)")
    def scan_host_key(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        from jobs import ssh  # the SSH stack loads where it is used, not with the admin at start-up
        from jobs.hosts import connecting

        for host in queryset:
            try:
                key = connecting.scan_host_key(host, request.user)
            except ssh.SSHError as exc:
                self.message_user(request, f"{host.name}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{host.name}: scanned {key.key_type} {key.fingerprint}")

    @admin.action(description="Approve the scanned host key")
    def approve_scanned_key(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        from jobs.hosts import connecting

        for host in queryset:
            if not host.scanned_key_fingerprint:
                self.message_user(request, f"{host.name}: scan its key first", messages.WARNING)
                continue
            connecting.approve_host_key(host, request.user, host.scanned_key_fingerprint)
            self.message_user(request, f"{host.name}: pinned {host.host_key_fingerprint}")


@admin.register(Disk)
class DiskAdmin(admin.ModelAdmin):
    list_display = ["label", "host", "target_path", "kind", "disk_type", "size", "stripes", "allow_destructive"]
    list_filter = ["kind", "disk_type", "allow_destructive"]
    search_fields = ["label", "target_path", "host__name"]
    # What the host said the target is; recorded by benchweb (the disk page's Record identity), never typed.
    readonly_fields = ["identity", "identity_recorded_at", "identity_note"]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "tool", "rw", "block_size_bytes", "iodepth", "jobs", "runtime_s", "builtin", "team"]
    list_filter = ["tool", "builtin"]


class ScheduleProfileInline(admin.TabularInline):
    model = ScheduleProfile
    extra = 0


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "cron", "interval_minutes", "timezone", "stagger_s", "enabled", "team"]
    list_filter = ["kind", "enabled"]
    inlines = [ScheduleProfileInline]
    filter_horizontal = ["targets"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "disk", "profile_name", "state", "trigger", "created_at", "finished_at"]
    list_filter = ["state", "trigger"]
    search_fields = ["uuid", "disk__label", "profile_name"]
    readonly_fields = ["uuid", "created_at"]

    # The charts read RunResult / RunResultDay: an edit or delete here keeps them in step with the run.
    def save_model(self, request: HttpRequest, obj: Run, form: Any, change: bool) -> None:
        before = RunResult.objects.filter(run=obj).first() if change else None
        super().save_model(request, obj, form, change)
        if before:  # out of the day it was counted in (its time or state may have changed)
            before.delete()
            RunResultDay.refresh(before)
            ChangePoint.refresh(obj.disk, before.profile_id, before.profile_name)
        RunResult.record(obj)  # succeeded runs only: the row and its day

    def delete_model(self, request: HttpRequest, obj: Run) -> None:
        result = RunResult.objects.filter(run=obj).first()
        with transaction.atomic():
            tally.deduct(Run.objects.filter(pk=obj.pk))
            super().delete_model(request, obj)
        if result:
            RunResultDay.refresh(result)
            ChangePoint.refresh(obj.disk, result.profile_id, result.profile_name)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        disks = set(queryset.values_list("disk_id", flat=True))
        with transaction.atomic():
            tally.deduct(Run.objects.filter(pk__in=queryset.values("pk")))
            super().delete_queryset(request, queryset)
        for disk in Disk.objects.filter(pk__in=disks):
            RunResultDay.rebuild(disk)
            ChangePoint.refresh_disk(disk)


@admin.register(RunSample)
class RunSampleAdmin(admin.ModelAdmin):
    list_display = ["run", "t_s", "read_iops", "write_iops"]


@admin.register(AlertChannel)
class AlertChannelAdmin(admin.ModelAdmin):
    """Look, turn off or delete; a channel is added on the Alert channels page or the API, which check its target
    and make its secret (never shown here)."""

    list_display = ["name", "kind", "target", "team", "enabled", "failures_in_a_row", "last_sent_at"]
    list_filter = ["kind", "enabled"]
    fields = ["name", "kind", "target", "events", "kinds", "enabled", "failures_in_a_row", "last_error"]
    readonly_fields = ["kind", "target", "failures_in_a_row", "last_error"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["summary", "channel", "state", "attempts", "response", "created_at", "next_attempt_at"]
    list_filter = ["state"]
    readonly_fields = ["channel", "event", "summary", "state", "attempts", "response", "error", "last_attempt_at",
                       "sent_at", "next_attempt_at"]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
