"""Every page's address, grouped by concept; each concept's pages live in jobs/<concept>/pages.py."""

from __future__ import annotations

from django.urls import path

from jobs import home
from jobs.alerts import pages as alerts
from jobs.changes import pages as changes
from jobs.disks import pages as disks
from jobs.exports import pages as exports
from jobs.hosts import pages as hosts
from jobs.imports import pages as imports
from jobs.metrics import api as metrics
from jobs.notify import pages as channels
from jobs.profiles import pages as profiles
from jobs.results import pages as results
from jobs.runs import pages as runs
from jobs.schedules import pages as schedules
from jobs.sets import pages as sets
from jobs.shares import pages as shares
from jobs.shares import public
from jobs.teams import pages as teams

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", home.healthz, name="healthz"),
    # Prometheus: a team's series for its API token (jobs/metrics/api.py)
    path("metrics", metrics.metrics, name="metrics"),
    # teams and accounts
    path("signup/", teams.signup, name="signup"),
    path("login/", teams.LoginView.as_view(), name="login"),
    path("logout/", teams.LogoutView.as_view(), name="logout"),
    path("team/switch", teams.switch_team, name="switch_team"),
    path("team/members/", teams.members, name="members"),
    path("team/settings/", teams.team_settings, name="team_settings"),
    path("team/members/<int:pk>", teams.member_change, name="member_change"),
    path("team/invitations/<int:pk>/revoke", teams.invitation_revoke, name="invitation_revoke"),
    path("invitations/", teams.invitations, name="invitations"),
    path("invitations/<str:token>", teams.invitation_answer, name="invitation_answer"),
    path("account/tokens/", teams.tokens, name="tokens"),
    path("account/tokens/<int:pk>/revoke", teams.token_revoke, name="token_revoke"),
    path("account/preferences/", teams.preferences, name="preferences"),
    # hosts
    path("hosts/", hosts.host_list, name="host_list"),
    path("hosts/new/", hosts.host_edit, name="host_new"),
    path("hosts/<int:pk>/", hosts.host_detail, name="host_detail"),
    path("hosts/<int:pk>/edit/", hosts.host_edit, name="host_edit"),
    path("hosts/<int:pk>/test/", hosts.host_test, name="host_test"),
    path("hosts/<int:pk>/scan-key", hosts.host_scan_key, name="host_scan_key"),
    path("hosts/<int:pk>/approve-key", hosts.host_approve_key, name="host_approve_key"),
    # disks and limits
    path("disk-types/", disks.disk_types, name="disk_types"),
    path("hosts/<int:host_pk>/disks/new/", disks.disk_edit, name="disk_new"),
    path("disks/<int:pk>/", disks.disk_detail, name="disk_detail"),
    path("disks/<int:pk>/edit/", disks.disk_edit, name="disk_edit"),
    path("disks/<int:pk>/identity/", disks.disk_record_identity, name="disk_record_identity"),
    path("disks/<int:pk>/precondition/", disks.disk_precondition, name="disk_precondition"),
    path("disks/limits-preview.json", disks.disk_limits_preview, name="disk_limits_preview"),
    # profiles
    path("profiles/", profiles.profile_list, name="profile_list"),
    path("profiles/new/", profiles.profile_edit, name="profile_new"),
    path("profiles/preview.json", profiles.profile_preview, name="profile_preview"),
    path("profiles/<int:pk>/", profiles.profile_detail, name="profile_detail"),
    path("profiles/<int:pk>/edit/", profiles.profile_edit, name="profile_edit"),
    path("profiles/<int:pk>/copy/", profiles.profile_copy, name="profile_copy"),
    # runs
    path("runs/", runs.run_list, name="run_list"),
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/progress.json", runs.run_progress, name="run_progress"),
    path("runs/<int:pk>/cancel", runs.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/raw", runs.run_raw, name="run_raw"),
    # sets of runs: a sweep's page, its charts' data, its cancel
    path("sets/group/new/", sets.group_new, name="group_new"),
    path("sets/compare/", sets.set_compare, name="set_compare"),
    path("sets/compare/series.json", sets.set_compare_series, name="set_compare_series"),
    path("sets/compare/groups/", sets.group_compare_page, name="group_compare"),
    path("sets/<int:pk>/history/", sets.group_history_page, name="group_history"),
    path("sets/<int:pk>/", sets.set_detail, name="set_detail"),
    path("sets/<int:pk>/series.json", sets.set_series, name="set_series"),
    path("sets/<int:pk>/cancel", sets.set_cancel, name="set_cancel"),
    # exports: CSV downloads and printable reports
    path("runs/export.csv", exports.runs_csv, name="runs_csv"),
    path("runs/<int:pk>/samples.csv", exports.run_samples_csv, name="run_samples_csv"),
    path("runs/<int:pk>/telemetry.csv", exports.run_telemetry_csv, name="run_telemetry_csv"),
    path("disks/<int:pk>/report/", exports.disk_report, name="disk_report"),
    path("compare/report/", exports.compare_report, name="compare_report"),
    path("sets/<int:pk>/report/", exports.set_report, name="set_report"),
    path("sets/<int:pk>/points.csv", exports.set_points_csv, name="set_points_csv"),
    # schedules
    path("schedules/", schedules.schedule_list, name="schedule_list"),
    path("schedules/new/", schedules.schedule_edit, name="schedule_new"),
    path("schedules/preview.json", schedules.schedule_preview, name="schedule_preview"),
    path("schedules/calendar/", schedules.calendar, name="calendar"),
    path("schedules/<int:pk>/", schedules.schedule_edit, name="schedule_edit"),
    path("schedules/<int:pk>/toggle", schedules.schedule_toggle, name="schedule_toggle"),
    path("schedules/<int:pk>/run-now", schedules.schedule_run_now, name="schedule_run_now"),
    # results
    path("overview/", results.overview, name="overview"),
    path("compare/", results.compare, name="compare"),
    path("compare/distributions.json", results.distributions_json, name="compare_distributions"),
    path("disks/<int:pk>/series.json", results.disk_series, name="disk_series"),
    path("runs/<int:pk>/series.json", results.run_series, name="run_series"),
    # changes: change points and annotations
    path("changes/", changes.changes, name="changes"),
    path("changes/<int:pk>/expected", changes.change_point_expected, name="change_point_expected"),
    path("annotations/<int:pk>/delete", changes.annotation_delete, name="annotation_delete"),
    # alerts
    path("alerts/", alerts.alert_list, name="alert_list"),
    path("alerts/rules/", alerts.alert_rules, name="alert_rules"),
    path("alerts/<int:pk>/", alerts.alert_detail, name="alert_detail"),
    path("alerts/<int:pk>/acknowledge", alerts.alert_acknowledge, name="alert_acknowledge"),
    path("alerts/<int:pk>/expected", alerts.alert_expected, name="alert_expected"),
    # alert channels and their delivery logs
    path("channels/", channels.channel_list, name="channel_list"),
    path("channels/<int:pk>/", channels.channel_detail, name="channel_detail"),
    path("channels/<int:pk>/test", channels.channel_test, name="channel_test"),
    path("channels/<int:pk>/rotate-secret", channels.channel_rotate_secret, name="channel_rotate_secret"),
    path("channels/<int:pk>/delete", channels.channel_delete, name="channel_delete"),
    # imports
    path("import/", imports.import_results, name="import_results"),
    path("import/sweep/", imports.import_sweep, name="import_sweep"),
    path("import/group/", imports.import_group, name="import_group"),
    # share links: the team's list, and the read-only pages they open without an account
    path("shares/", shares.share_list, name="share_list"),
    path("shares/<int:pk>/revoke", shares.share_revoke, name="share_revoke"),
    path("s/<str:token>/", public.shared, name="shared"),
    path("s/<str:token>/series.json", public.shared_series, name="shared_series"),
    path("s/<str:token>/distributions.json", public.shared_distributions, name="shared_distributions"),
]
