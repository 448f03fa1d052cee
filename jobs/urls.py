from __future__ import annotations

from django.urls import include, path

from jobs import account_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("signup/", views.signup, name="signup"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("disk-types/", views.disk_types, name="disk_types"),
    path("team/switch", account_views.switch_team, name="switch_team"),
    path("team/members/", account_views.members, name="members"),
    path("team/members/<int:pk>", account_views.member_change, name="member_change"),
    path("team/invitations/<int:pk>/revoke", account_views.invitation_revoke, name="invitation_revoke"),
    path("invitations/", account_views.invitations, name="invitations"),
    path("invitations/<str:token>", account_views.invitation_answer, name="invitation_answer"),
    path("account/tokens/", account_views.tokens, name="tokens"),
    path("account/tokens/<int:pk>/revoke", account_views.token_revoke, name="token_revoke"),
    path("healthz", views.healthz, name="healthz"),
    path("hosts/<int:pk>/", views.host_detail, name="host_detail"),
    path("hosts/<int:pk>/scan-key", views.host_scan_key, name="host_scan_key"),
    path("hosts/<int:pk>/approve-key", views.host_approve_key, name="host_approve_key"),
    path("disks/<int:pk>/", views.disk_detail, name="disk_detail"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/progress.json", views.run_progress, name="run_progress"),
    path("runs/<int:pk>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/raw", views.run_raw, name="run_raw"),
    path("schedules/", views.schedule_list, name="schedule_list"),
    path("schedules/new/", views.schedule_edit, name="schedule_new"),
    path("schedules/preview.json", views.schedule_preview, name="schedule_preview"),
    path("schedules/calendar/", views.calendar, name="calendar"),
    path("schedules/<int:pk>/", views.schedule_edit, name="schedule_edit"),
    path("schedules/<int:pk>/toggle", views.schedule_toggle, name="schedule_toggle"),
    path("schedules/<int:pk>/run-now", views.schedule_run_now, name="schedule_run_now"),
    path("", include("jobs.chart_urls")),
    path("", include("jobs.manage_urls")),
]
