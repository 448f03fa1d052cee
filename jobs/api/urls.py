from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from jobs.api import views

router = DefaultRouter()
router.register("tokens", views.TokenViewSet, basename="api-token")
router.register("teams", views.TeamListViewSet, basename="api-team")
router.register("members", views.MemberViewSet, basename="api-member")
router.register("hosts", views.HostViewSet, basename="api-host")
router.register("disks", views.DiskViewSet, basename="api-disk")
router.register("disk-types", views.DiskTypeViewSet, basename="api-disk-type")
router.register("profiles", views.ProfileViewSet, basename="api-profile")
router.register("schedules", views.ScheduleViewSet, basename="api-schedule")
router.register("runs", views.RunViewSet, basename="api-run")
router.register("import", views.ImportViewSet, basename="api-import")

urlpatterns = [
    path("v1/", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file and the template has no inline style, so the docs
    # work under the site's strict CSP.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
]
