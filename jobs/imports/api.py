"""The API's import."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import links
from jobs.api.base import JsonTypes, TeamScoped, TeamViewSet
from jobs.api.parsers import JSONParser
from jobs.imports import groups, importing, sweeps
from jobs.imports.forms import MAX_IMPORT_CHARS, MAX_IMPORT_FILES, normalise_newlines
from jobs.models import Disk, Run, RunSet
from jobs.runs.api import RunSerializer
from jobs.tools.summary import ParseError, ParseResult


class ImportSerializer(JsonTypes, serializers.Serializer):
    disk = TeamScoped(queryset=Disk.objects.select_related("host"))
    tool = serializers.ChoiceField(choices=["auto", "fio", "ndisk64"], default="auto")
    finished_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When the run ended; empty: now."
    )
    text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, help_text="Pasted output.")
    name = serializers.CharField(required=False, max_length=200, default="pasted text", help_text="Names the text.")
    files = serializers.ListField(
        child=serializers.FileField(), required=False, max_length=MAX_IMPORT_FILES, help_text="Each file is one result."
    )
    dry_run = serializers.BooleanField(default=False, help_text="Parse and show the numbers; store nothing.")
    results = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=200),
        required=False,
        allow_null=True,
        default=None,
        help_text="The labels of the results to store, from each source ('group 0', 'client 10.0.0.5', 'All "
        "clients'; '' is the only result of a one-result output). Default: every result, each as a run of its "
        "own (never summed). A source without one of these labels is refused, naming the labels it holds.",
    )

    def validate_finished_at(self, value: Any) -> Any:
        if value and value > timezone.now():
            raise serializers.ValidationError("This is in the future: give when the run finished, or leave it empty.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        text, files = attrs.get("text") or "", attrs.get("files") or []
        sources = [(attrs["name"], text)] if text.strip() else []
        for upload in files:
            try:
                sources.append((upload.name[:200], upload.read(MAX_IMPORT_CHARS * 4 + 1).decode("utf-8")))
            except UnicodeDecodeError as exc:
                raise serializers.ValidationError({"files": f"{upload.name} is not UTF-8 text."}) from exc
        if not sources:
            raise serializers.ValidationError({"text": "Give the tool's output as text, or upload files."})
        total = sum(len(body) for _, body in sources)
        if total > MAX_IMPORT_CHARS:
            raise serializers.ValidationError(
                {
                    "files" if files else "text": f"That is {total:,} characters; import up to {MAX_IMPORT_CHARS:,} at "
                    "a time, or large outputs with `manage.py import_results FILE --disk ID`."
                }
            )
        attrs["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return attrs


class NamedOutputSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=200, default="", help_text="Names the output.")
    text = serializers.CharField(trim_whitespace=False, help_text="One output of the tool.")


class SweepImportSerializer(JsonTypes, serializers.Serializer):
    disk = TeamScoped(queryset=Disk.objects.select_related("host"))
    tool = serializers.ChoiceField(choices=["auto", "fio", "ndisk64"], default="auto")
    finished_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the last point ended; each earlier one ended when the next began. Empty: now.",
    )
    outputs = NamedOutputSerializer(
        many=True, required=False, help_text="The outputs as text, one a point; unnamed ones are 'output N'."
    )
    files = serializers.ListField(
        child=serializers.FileField(), required=False, max_length=MAX_IMPORT_FILES, help_text="Each file is one output."
    )
    dry_run = serializers.BooleanField(default=False, help_text="Read the outputs and show the sweeps; store nothing.")

    validate_finished_at = ImportSerializer.validate_finished_at

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = attrs.get("outputs") or []
        sources = [(o["name"] or f"output {n}", o["text"]) for n, o in enumerate(given, 1)]
        for upload in attrs.get("files") or []:
            try:
                sources.append((upload.name[:200], upload.read(MAX_IMPORT_CHARS * 4 + 1).decode("utf-8")))
            except UnicodeDecodeError as exc:
                raise serializers.ValidationError({"files": f"{upload.name} is not UTF-8 text."}) from exc
        if sum(len(body) for _, body in sources) > MAX_IMPORT_CHARS:
            raise serializers.ValidationError(
                {"outputs": f"Over {MAX_IMPORT_CHARS:,} characters in all: import fewer outputs at a time."}
            )
        attrs["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return attrs


class ImportedSweepPointSerializer(serializers.Serializer):
    point = serializers.DictField(child=serializers.IntegerField(), help_text="The fields this point sets.")
    output = serializers.CharField(help_text="The output measured at it: 'output N (its name)'.")
    run = serializers.IntegerField(allow_null=True, help_text="The member run that stores it; null in a dry run.")


class ImportedSweepSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="The set's id; null in a dry run.")
    url = serializers.CharField(allow_null=True, help_text="The set's page; null in a dry run.")
    name = serializers.CharField()
    rw = serializers.CharField(help_text="The rw of its outputs (ndisk64: random or sequential): each rw is a sweep.")
    axes = serializers.ListField(child=serializers.DictField(), help_text='[{"field", "values"}], the first outer.')
    points = ImportedSweepPointSerializer(many=True)


class SweepImportResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    sets = ImportedSweepSerializer(many=True)


class GroupImportSerializer(JsonTypes, serializers.Serializer):
    tool = serializers.ChoiceField(choices=["auto", "fio"], default="auto")
    finished_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the run ended (the longest client's end; the clients are taken to have started together). "
        "Empty: now.",
    )
    text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, help_text="The output.")
    name = serializers.CharField(required=False, max_length=200, default="pasted text", help_text="Names the text.")
    file = serializers.FileField(required=False, help_text="The output as a file, instead of text.")
    disks = serializers.ListField(
        child=TeamScoped(queryset=Disk.objects.select_related("host"), allow_null=True),
        required=False,
        default=list,
        help_text="One disk id a client, in the order fio printed the clients (null: the one its host name "
        "matches). Empty: each client on the team's only disk of the host named or addressed as fio names the "
        "client.",
    )
    dry_run = serializers.BooleanField(default=False, help_text="Read the output and show the group; store nothing.")

    validate_finished_at = ImportSerializer.validate_finished_at

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        upload = attrs.get("file")
        if upload is not None:
            try:
                attrs["name"], attrs["text"] = upload.name[:200], upload.read(MAX_IMPORT_CHARS * 4 + 1).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise serializers.ValidationError({"file": f"{upload.name} is not UTF-8 text."}) from exc
        text = attrs.get("text") or ""
        if not text.strip():
            raise serializers.ValidationError({"text": "Give the output of fio --client as text, or upload it."})
        if len(text) > MAX_IMPORT_CHARS:
            raise serializers.ValidationError(
                {"text": f"Over {MAX_IMPORT_CHARS:,} characters: import a shorter output."}
            )
        attrs["text"] = normalise_newlines(text)
        return attrs


class ImportedClientSerializer(serializers.Serializer):
    client = serializers.CharField(help_text="'client 2 (10.0.0.5)': its place in fio's order and its host name.")
    # The serializer metaclass moves declared fields out of the class, so this does not shadow Field.label.
    label = serializers.CharField(help_text="The result's label in the output ('client 10.0.0.5').")  # type: ignore[assignment]
    host = serializers.CharField(allow_null=True, help_text="The host name fio printed; null when it printed none.")
    disk = serializers.IntegerField(allow_null=True, help_text="Its disk; null when none was chosen or matched.")
    matched_by_host = serializers.BooleanField(help_text="The disk was matched by the client's host name.")
    iops = serializers.FloatField(allow_null=True)
    bytes_per_s = serializers.FloatField(allow_null=True)
    run = serializers.IntegerField(allow_null=True, help_text="The member run that stores it; null in a dry run.")


class GroupImportResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    id = serializers.IntegerField(allow_null=True, help_text="The group's id; null in a dry run.")
    url = serializers.CharField(allow_null=True, help_text="The group's page; null in a dry run.")
    name = serializers.CharField()
    clients = ImportedClientSerializer(many=True)
    clients_sum = serializers.DictField(help_text="benchweb's total: each client's own iops and bw_bytes_per_s added.")
    fio_total = serializers.DictField(
        help_text='fio\'s own "All clients" total (iops, bytes_per_s, printed; null figures when fio printed none) '
        "and `why`: whether it agrees with benchweb's."
    )
    notes = serializers.ListField(child=serializers.CharField(), help_text="What fio's output left unsaid.")
    refused = serializers.CharField(
        allow_null=True,
        help_text="In a dry run, why saving would be refused (a client without a disk, a disk given twice, a client "
        "already stored); null when it would be stored.",
    )


class ParsedSerializer(serializers.Serializer):
    """One result of one source."""

    name = serializers.CharField(help_text="The source: the file name, or the `name` of the pasted text.")
    # The serializer metaclass moves declared fields out of the class, so these do not shadow Field.label etc.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="Which result of the output; empty for an output with one result."
    )
    partial = serializers.CharField(  # type: ignore[assignment]
        help_text="Non-empty for an excerpt (a lone summary line): what it does not say."
    )
    format = serializers.CharField()
    series = serializers.CharField(help_text="The run's name, from the output's workload: its chart series.")
    summary = serializers.DictField(help_text="The canonical summary; `printed` and `workload` are what it showed.")
    job_errors = serializers.ListField(child=serializers.DictField())
    duplicate_of = serializers.IntegerField(
        allow_null=True, help_text="The run of the disk that already holds this result; such a result is not stored."
    )


class ImportResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    parsed = ParsedSerializer(many=True)
    runs = RunSerializer(many=True)


class DuplicateSerializer(serializers.Serializer):
    detail = serializers.CharField()
    duplicate_of = serializers.IntegerField(help_text="The id of the run that already holds this output.")
    run_url = serializers.CharField(help_text="Where that run is in the API.")


class ImportViewSet(TeamViewSet):
    """Import existing fio or ndisk64 output as finished runs of a disk."""

    serializer_class = ImportSerializer
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": ImportSerializer, "multipart/form-data": ImportSerializer},
        responses={200: ImportResultSerializer, 201: ImportResultSerializer, 409: DuplicateSerializer},
    )
    def create(self, request: Request) -> Response:
        """Parse the output (JSON `text`, or multipart `files`); with dry_run, store nothing and show the numbers.

        Every result of an output (each fio group, each client and "All clients") is its own run, or those named
        in `results`. The same output already stored on the disk is refused with 409 and the run holding it."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        parsed, problems = [], []
        for name, text in data["sources"]:
            try:
                results = importing.pick(importing.parse_results(text, data["tool"]), data.get("results"))
            except ParseError as exc:
                problems.append(f"{name}: {exc}")
                continue
            parsed += [_parsed(data["disk"], name, text, result) for result in results]
        if problems:
            raise ValidationError({"files" if data.get("files") else "text": problems})
        runs: list[Run] = []
        if not data["dry_run"]:
            try:
                with transaction.atomic():
                    runs = [
                        run
                        for name, text in data["sources"]
                        for run in importing.import_results(
                            data["disk"], text, name=name, at=data.get("finished_at"), user=request.user,
                            tool=data["tool"], labels=data.get("results"),
                        )
                    ]  # fmt: skip
            except importing.DuplicateImport as exc:
                first = exc.first.pk
                url = links.absolute(reverse("api-run-detail", kwargs={"pk": first}), request)
                answer = {"detail": str(exc), "duplicate_of": first, "run_url": url}
                return Response(DuplicateSerializer(answer).data, status=status.HTTP_409_CONFLICT)
        answer = {"dry_run": data["dry_run"], "parsed": parsed, "runs": runs}
        code = status.HTTP_200_OK if data["dry_run"] else status.HTTP_201_CREATED
        return Response(ImportResultSerializer(answer).data, status=code)

    @extend_schema(
        request={"application/json": SweepImportSerializer, "multipart/form-data": SweepImportSerializer},
        responses={200: SweepImportResultSerializer, 201: SweepImportResultSerializer, 409: DuplicateSerializer},
    )
    @action(detail=False, methods=["post"], url_path="sweep", serializer_class=SweepImportSerializer)
    def sweep(self, request: Request) -> Response:
        """Import several outputs (JSON `outputs`, or multipart `files`), one a point, as sweeps of the disk.

        Each output's point is read from its own parameters (iodepth, jobs, block size, read share); the outputs
        of each rw are one sweep, whose axes are the fields that differ (at most two), and must fill its grid.
        All are stored or none: a refusal (400) names the output and its field; an output already stored on the
        disk is refused too. With dry_run, the sweeps are shown and nothing is stored."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        disk, sources = data["disk"], data["sources"]
        planned = sweeps.plan_sweeps(sweeps.read_outputs(sources, data["tool"], disk))
        if data["dry_run"]:
            answer = {"dry_run": True, "sets": [_sweep_answer(sweep, None, request) for sweep in planned]}
            return Response(SweepImportResultSerializer(answer).data)
        try:
            made = sweeps.import_sweeps(disk, sources, at=data.get("finished_at"), user=request.user, tool=data["tool"])
        except importing.DuplicateImport as exc:
            url = links.absolute(reverse("api-run-detail", kwargs={"pk": exc.first.pk}), request)
            answer = {"detail": str(exc), "duplicate_of": exc.first.pk, "run_url": url}
            return Response(DuplicateSerializer(answer).data, status=status.HTTP_409_CONFLICT)
        sets = [_sweep_answer(sweep, run_set, request) for sweep, run_set in zip(planned, made, strict=True)]
        return Response(SweepImportResultSerializer({"dry_run": False, "sets": sets}).data, status=201)

    @extend_schema(
        request={"application/json": GroupImportSerializer, "multipart/form-data": GroupImportSerializer},
        responses={200: GroupImportResultSerializer, 201: GroupImportResultSerializer, 409: DuplicateSerializer},
    )
    @action(detail=False, methods=["post"], url_path="group", serializer_class=GroupImportSerializer)
    def group(self, request: Request) -> Response:
        """Import one output of fio --client (JSON `text`, or a multipart `file`) as a synchronised group.

        Each client is a member run on its disk: the one given in `disks` (in fio's order), else the team's only
        disk of the host its host name names. fio's "All clients" total is kept beside benchweb's sum of the
        clients. A refusal (400) names the field and the fix and stores nothing; a client already stored on its
        disk is refused too. With dry_run, the group is shown with the disks it would go on (and, in `refused`, why
        saving it would be refused), and nothing is stored."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        planned = groups.plan(self.team, data["name"], data["text"], data["disks"], data["tool"])
        if data["dry_run"]:
            problem = groups.refusal(planned)
            answer = _group_answer(planned, None, request) | {"refused": str(problem) if problem else None}
            return Response(GroupImportResultSerializer(answer).data)
        try:
            made = groups.import_group(planned, at=data.get("finished_at"), user=request.user)
        except importing.DuplicateImport as exc:
            url = links.absolute(reverse("api-run-detail", kwargs={"pk": exc.first.pk}), request)
            answer = {"detail": str(exc), "duplicate_of": exc.first.pk, "run_url": url}
            return Response(DuplicateSerializer(answer).data, status=status.HTTP_409_CONFLICT)
        return Response(GroupImportResultSerializer(_group_answer(planned, made, request)).data, status=201)


def _group_answer(planned: groups.Planned, run_set: RunSet | None, request: Request) -> dict[str, Any]:
    runs = dict(run_set.members.values_list("set_index", "pk")) if run_set else {}
    clients = [
        {
            "client": client.called, "label": client.result.label, "host": client.host,
            "disk": disk.pk if disk else None, "matched_by_host": matched,
            "iops": (client.result.summary.get("total") or {}).get("iops"),
            "bytes_per_s": (client.result.summary.get("total") or {}).get("bw_bytes_per_s"), "run": runs.get(index),
        }
        for index, (client, disk, matched) in enumerate(zip(planned.run.clients, planned.disks, planned.matched,
                                                             strict=True))
    ]  # fmt: skip
    return {
        "dry_run": run_set is None, "id": run_set.pk if run_set else None,
        "url": links.absolute(sweeps.page_path(run_set), request) if run_set else None,
        "name": planned.set_name, "clients": clients, "clients_sum": planned.clients_sum,
        "fio_total": planned.fio_total, "notes": planned.notes(), "refused": None,
    }  # fmt: skip


def _sweep_answer(sweep: sweeps.Sweep, run_set: RunSet | None, request: Request) -> dict[str, Any]:
    runs = dict(run_set.members.values_list("set_index", "pk")) if run_set else {}
    return {
        "id": run_set.pk if run_set else None,
        "url": links.absolute(sweeps.page_path(run_set), request) if run_set else None,
        "name": sweep.name,
        "rw": sweep.rw,
        "axes": [{"field": a.field, "values": list(a.values)} for a in sweep.plan.axes],
        "points": [
            {"point": point, "output": output.called, "run": runs.get(index)}
            for index, (point, output) in enumerate(zip(sweep.plan.points, sweep.outputs, strict=True))
        ],
    }


def _parsed(disk: Disk, name: str, text: str, result: ParseResult) -> dict[str, Any]:
    first = importing.duplicate_of(disk, text, result.label)
    return {
        "name": name,
        "label": result.label,
        "partial": result.partial,
        "format": result.format,
        "series": importing.series_name(result, name),
        "summary": result.summary,
        "job_errors": result.job_errors,
        "duplicate_of": first.pk if first else None,
    }
