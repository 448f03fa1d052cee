"""The API's CSV downloads: GET /api/v1/runs/export.csv (the runs list's filters), GET /api/v1/runs/{id}/samples.csv
and GET /api/v1/sets/{id}/points.csv (a sweep's points, a group's members and totals), and the set's file as JSON
(GET /api/v1/sets/{id}/export/). What a cell holds is said in jobs/exports/tables.py."""

from __future__ import annotations

from typing import Any

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api.auth import access
from jobs.api.pagination import ALWAYS_ALLOWED
from jobs.api.permissions import TeamRole
from jobs.exports import downloads
from jobs.models import Run, RunSet, Team
from jobs.runs.api import RunFilter

CSV_ANSWER = OpenApiResponse(
    response=OpenApiTypes.STR, description="CSV, UTF-8, one header line; sent as it is read (no Content-Length)."
)


class CsvRenderer(BaseRenderer):
    """Lets a client ask for text/csv (Accept or ?format=csv). The views answer CSV themselves, and a refusal
    in JSON (_CsvView.handle_exception), so this never renders anything."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        raise NotImplementedError("the CSV views stream their own answer")


class _CsvView(APIView):
    permission_classes = [permissions.IsAuthenticated, TeamRole]
    renderer_classes = [JSONRenderer, CsvRenderer]

    @property
    def team(self) -> Team:
        found = access(self.request)
        assert found is not None  # TeamRole refused the request otherwise
        return found.team

    def handle_exception(self, exc: Exception) -> Response:
        # A refusal is the API's JSON body, as documented, whatever the client asked for.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        # So is OPTIONS's description of the endpoint: only GET has CSV to send (?format=csv once gave a 500).
        if request.method == "OPTIONS":
            return JSONRenderer(), "application/json"
        try:
            return super().perform_content_negotiation(request, force)
        except Http404 as exc:  # DRF's bare 404 "Not found." for a format it has no renderer of
            given = request.query_params.get("format", "")
            raise ValidationError({"format": [f"Give csv or json, not {given[:40]!r}."]}) from exc


class RunsCsvView(_CsvView):
    @extend_schema(operation_id="runs_export_csv", parameters=[RunFilter], responses={(200, "text/csv"): CSV_ANSWER})
    def get(self, request: Request) -> StreamingHttpResponse:
        """Every run the filters select (the runs list's), newest first, one CSV row each: state, host, disk,
        profile, times in UTC, the tool's figures (numbers in the unit the column names, and as printed), latency
        percentiles, the limit with its source, efficiency, steady state, warnings, the run page's address."""
        allowed = tuple(RunFilter().fields)
        # As the runs list refuses them (jobs/api/pagination.py): an unknown or empty filter would export runs
        # the caller did not ask for.
        problems = {name: [f"This export takes no {name!r}; it takes: {', '.join(allowed)}."]
                    for name in sorted(set(request.query_params) - {*allowed, *ALWAYS_ALLOWED})}  # fmt: skip
        for name in allowed:
            if "" in request.query_params.getlist(name):
                problems[name] = [f"Give {name} a value, or leave the parameter out."]
        if problems:
            raise ValidationError(problems)
        filters = RunFilter(data=request.query_params)
        filters.is_valid(raise_exception=True)
        return downloads.runs(request, self.team, filters)


class RunSamplesCsvView(_CsvView):
    @extend_schema(operation_id="run_samples_csv", responses={(200, "text/csv"): CSV_ANSWER})
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        """The run's per-second samples in time order: t_s, the moment in UTC, read, write and total IOPS."""
        return downloads.samples(get_object_or_404(Run.objects.select_related("disk"), pk=pk, team=self.team))


class SetPointsCsvView(_CsvView):
    @extend_schema(operation_id="set_points_csv", responses={(200, "text/csv"): CSV_ANSWER})
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        """The sweep's points in their order, one row each: index (from 0), each axis's value, the member run and
        its state, total IOPS, bandwidth in bytes/s, p50/p99/p99.9 in µs (the worse direction), the limit and
        burst IOPS at the point's block size, the run's page. Empty where a point did not succeed or its tool did
        not report the figure. While the sweep runs, the points so far. A group: a row per member (row "member":
        run, disk, host, state, start, IOPS, bytes/s, p99), a row per total (row "total": what it covers, its
        window's start, end and seconds, why it is empty) and its limit (row "limit")."""
        return downloads.set_points(
            request, get_object_or_404(RunSet.objects.select_related("disk"), pk=pk, team=self.team)
        )


SET_EXPORT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        '{"set": id, "kind": "sweep" | "sla" | "group", "columns": [the CSV header], "rows": [{column: value}]}: '
        "the rows of the set's points.csv, each an object keyed by the header's columns; null where the CSV has an "
        "empty cell."
    ),
)


class SetExportView(APIView):
    permission_classes = [permissions.IsAuthenticated, TeamRole]

    @extend_schema(operation_id="set_export", responses={200: SET_EXPORT})
    def get(self, request: Request, pk: int) -> Response:
        """The set's points.csv as JSON: a sweep's points, or a group's members (run, disk, host, state, start,
        IOPS, bytes/s, p99) and its totals, each with its window, and its limit."""
        found = access(request)
        assert found is not None  # TeamRole refused the request otherwise
        run_set = get_object_or_404(RunSet.objects.select_related("disk"), pk=pk, team=found.team)
        header, *rows = downloads.set_rows(request, run_set)
        return Response({"set": run_set.pk, "kind": run_set.kind, "columns": header,
                         "rows": [dict(zip(header, row, strict=True)) for row in rows]})  # fmt: skip
