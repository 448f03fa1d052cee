from __future__ import annotations

from django.urls import path

from jobs import manage_views as views

urlpatterns = [
    path("overview/", views.overview, name="overview"),
    path("hosts/", views.host_list, name="host_list"),
    path("hosts/new/", views.host_edit, name="host_new"),
    path("hosts/<int:pk>/edit/", views.host_edit, name="host_edit"),
    path("hosts/<int:pk>/test/", views.host_test, name="host_test"),
    path("hosts/<int:host_pk>/disks/new/", views.disk_edit, name="disk_new"),
    path("disks/<int:pk>/edit/", views.disk_edit, name="disk_edit"),
    path("disks/<int:pk>/identity/", views.disk_record_identity, name="disk_record_identity"),
    path("disks/limits-preview.json", views.disk_limits_preview, name="disk_limits_preview"),
    path("profiles/", views.profile_list, name="profile_list"),
    path("profiles/new/", views.profile_edit, name="profile_new"),
    path("profiles/preview.json", views.profile_preview, name="profile_preview"),
    path("profiles/<int:pk>/", views.profile_detail, name="profile_detail"),
    path("profiles/<int:pk>/edit/", views.profile_edit, name="profile_edit"),
    path("profiles/<int:pk>/copy/", views.profile_copy, name="profile_copy"),
    path("import/", views.import_results, name="import_results"),
    path("compare/", views.compare, name="compare"),
]
