"""The API's URLs: every concept's viewsets on one router under /api/v1/, the schema and its docs page.

Apart from the kit in jobs/api/ on purpose: the router imports every concept, the kit none (pyproject.toml's
import-linter contracts)."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from jobs.alerts.api import AlertRuleViewSet, AlertViewSet
from jobs.changes.api import AnnotationViewSet, ChangePointViewSet
from jobs.disks.api import DiskTypeViewSet, DiskViewSet
from jobs.exports.api import RunSamplesCsvView, RunsCsvView, SetExportView, SetPointsCsvView
from jobs.hosts.api import HostViewSet
from jobs.imports.api import ImportViewSet
from jobs.notify.api import AlertChannelViewSet
from jobs.profiles.api import ProfileViewSet
from jobs.results.api import CompareStatsView, DistributionsView
from jobs.runs.api import RunViewSet
from jobs.schedules.api import ScheduleViewSet
from jobs.sets.api import RunSetViewSet
from jobs.shares.api import ShareLinkViewSet
from jobs.teams.api import MemberViewSet, TeamListViewSet, TokenViewSet

router = DefaultRouter()
router.register("tokens", TokenViewSet, basename="api-token")
router.register("teams", TeamListViewSet, basename="api-team")
router.register("members", MemberViewSet, basename="api-member")
router.register("hosts", HostViewSet, basename="api-host")
router.register("disks", DiskViewSet, basename="api-disk")
router.register("disk-types", DiskTypeViewSet, basename="api-disk-type")
router.register("profiles", ProfileViewSet, basename="api-profile")
router.register("schedules", ScheduleViewSet, basename="api-schedule")
router.register("runs", RunViewSet, basename="api-run")
router.register("sets", RunSetViewSet, basename="api-set")
router.register("import", ImportViewSet, basename="api-import")
router.register("change-points", ChangePointViewSet, basename="api-change-point")
router.register("annotations", AnnotationViewSet, basename="api-annotation")
router.register("alerts", AlertViewSet, basename="api-alert")
router.register("alert-rules", AlertRuleViewSet, basename="api-alert-rule")
router.register("share-links", ShareLinkViewSet, basename="api-share-link")
router.register("alert-channels", AlertChannelViewSet, basename="api-alert-channel")

urlpatterns = [
    path("v1/compare/stats/", CompareStatsView.as_view(), name="api-compare-stats"),
    path("v1/distributions/", DistributionsView.as_view(), name="api-distributions"),
    # Before the router's runs/<pk>/ and sets/<pk>/ routes: CSV downloads (jobs/exports/tables.py).
    path("v1/runs/export.csv", RunsCsvView.as_view(), name="api-runs-csv"),
    path("v1/runs/<int:pk>/samples.csv", RunSamplesCsvView.as_view(), name="api-run-samples-csv"),
    path("v1/sets/<int:pk>/points.csv", SetPointsCsvView.as_view(), name="api-set-points-csv"),
    path("v1/sets/<int:pk>/export/", SetExportView.as_view(), name="api-set-export"),
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
