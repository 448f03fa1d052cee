"""The API's statistics: two sets of runs compared (GET /api/v1/compare/stats/) and latency distributions side by
side (GET /api/v1/distributions/). Both read their query where the Compare page does, so the answers agree."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.analysis import stats as analysis
from jobs.api.auth import access
from jobs.api.permissions import TeamRole
from jobs.api.stats import CompareStatsSerializer, DistributionsSerializer
from jobs.disks.api import ISO_MOMENT
from jobs.models import Team
from jobs.results import distributions, stats

IDS = {"type": "string", "pattern": r"^[0-9]+(,[0-9]+)*$"}
ID = {"type": "string", "pattern": r"^[0-9]+$"}


class _TeamView(APIView):
    permission_classes = [permissions.IsAuthenticated, TeamRole]

    @property
    def team(self) -> Team:
        found = access(self.request)
        assert found is not None  # TeamRole refused the request otherwise
        return found.team


def _refused(exc: stats.StatsError) -> ValidationError:
    return ValidationError({exc.field: [str(exc)]})


class CompareStatsView(_TeamView):
    @extend_schema(
        operation_id="compare_stats",
        parameters=[
            OpenApiParameter("a_disk", ID, description="Disk A's id; with b_disk."),
            OpenApiParameter("b_disk", ID, description="Disk B's id; with a_disk."),
            OpenApiParameter("disk", ID, description="One disk before and after `split`; instead of a_disk/b_disk."),
            OpenApiParameter("split", ISO_MOMENT, description="With disk: an ISO date (midnight UTC) or date-time."),
            OpenApiParameter(
                "annotation",
                ID,
                description="Instead of split: a note's id; its moment splits the runs (the note's own disk unless "
                "disk is given).",
            ),
            OpenApiParameter(
                "profile", str, description="A profile's name. Default: the one profile every disk has runs of."
            ),
            OpenApiParameter("metric", str, enum=list(stats.METRICS), description="Default: iops (total IOPS)."),
            OpenApiParameter("test", str, enum=list(analysis.TESTS), description="Default: mann-whitney."),
            OpenApiParameter(
                "skip_unsteady",
                str,
                enum=["true", "false"],
                description="Default true: runs judged not steady are left out (runs not checked stay).",
            ),
        ],
        responses={200: CompareStatsSerializer},
    )
    def get(self, request: Request) -> Response:
        """Two sets of runs compared with a statistical test, the difference with its 95 % confidence interval
        and the verdict in words: disk A against disk B under one profile, or one disk before against after a
        moment. Fewer than 5 runs in a set answers verdict `not_enough` ("not enough runs to tell")."""
        try:
            return Response(stats.compare(stats.parse(request.query_params, self.team)))
        except stats.StatsError as exc:
            raise _refused(exc) from exc


class DistributionsView(_TeamView):
    @extend_schema(
        operation_id="distributions",
        parameters=[
            OpenApiParameter("runs", IDS, description="Up to 8 run ids, separated by commas."),
            OpenApiParameter("disks", IDS, description="Up to 8 disk ids: each disk's latest run of `profile`."),
            OpenApiParameter(
                "profile", str, description="With disks: a profile's name. Default: the one every disk has runs of."
            ),
        ],
        responses={200: DistributionsSerializer},
    )
    def get(self, request: Request) -> Response:
        """Completion-latency CDFs (and histograms where json+ bins exist) of chosen runs or disks, per
        direction: the points are the percentiles the tool printed, or every json+ bin."""
        try:
            found: dict[str, Any] = distributions.answer(request.query_params, self.team)
        except stats.StatsError as exc:
            raise _refused(exc) from exc
        return Response(found)
