"""What the client expects of benchweb's API, as its OpenAPI schema (GET /api/schema/) states it: each operation
it calls, the query parameters and body fields it sends, and the answer's fields it reads ("results[].label":
a field of each item of `results`). The client builds its URLs from here, and benchweb's tests check every entry
against the server's schema (`drift`), so a renamed field fails a test instead of a pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # as the schema writes it: /api/v1/runs/{id}/
    params: tuple[str, ...] = ()
    sends: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    status: int = 200
    content: str = "application/json"
    headers: tuple[str, ...] = ()  # request headers it sends
    answer_headers: tuple[str, ...] = ()  # answer headers it reads

    def url(self, **ids: int) -> str:
        return self.path.format(**ids)


RUN_FIELDS = (
    "id", "disk", "profile", "profile_name", "state", "final", "explanation", "started_at", "finished_at",
    "progress", "warnings", "steady_state.state", "steady_state.why", "summary", "limits_snapshot",
    "verdicts[].kind", "verdicts[].text", "run_set",
)  # fmt: skip

IDEMPOTENCY, REPLAYED = ("Idempotency-Key",), ("Idempotent-Replayed",)

OPERATIONS = {
    "disks": Operation("GET", "/api/v1/disks/", params=("page", "page_size"),
                       reads=("next", "results[].id", "results[].label", "results[].host", "results[].target_path")),
    "hosts": Operation("GET", "/api/v1/hosts/", params=("page", "page_size"),
                       reads=("next", "results[].id", "results[].name")),
    "profiles": Operation("GET", "/api/v1/profiles/", params=("page", "page_size"),
                          reads=("next", "results[].id", "results[].name", "results[].sweep_plan",
                                 "results[].sla_target_us")),
    "run_create": Operation("POST", "/api/v1/runs/", sends=("disk", "profile"), reads=RUN_FIELDS, status=201,
                            headers=IDEMPOTENCY, answer_headers=REPLAYED),
    "run": Operation("GET", "/api/v1/runs/{id}/", reads=RUN_FIELDS),
    "runs": Operation("GET", "/api/v1/runs/", params=("id", "disk", "profile", "state", "page_size"),
                      reads=("results[].id", "results[].finished_at", "results[].state", "results[].final",
                             "results[].progress", "results[].explanation")),
    "run_cancel": Operation("POST", "/api/v1/runs/{id}/cancel/", reads=("id", "state", "final")),
    "set_create": Operation("POST", "/api/v1/sets/", sends=("disk", "disks", "profile"),
                            reads=("id", "members[].id", "members[].state", "members[].disk"), status=201,
                            headers=IDEMPOTENCY, answer_headers=REPLAYED),
    "set_cancel": Operation("POST", "/api/v1/sets/{id}/cancel/", reads=("id", "state")),
    "compare": Operation("GET", "/api/v1/compare/stats/", params=("disk", "split", "profile", "metric"),
                         reads=("verdict", "text", "percent", "a.left_out_unsteady", "b.left_out_unsteady")),
    "import": Operation("POST", "/api/v1/import/", sends=("disk", "tool", "name", "text", "dry_run", "finished_at"),
                        reads=("dry_run", "parsed[].name", "parsed[].label", "parsed[].summary",
                               "parsed[].duplicate_of", "runs[].id"), status=201),
    "runs_csv": Operation("GET", "/api/v1/runs/export.csv",
                          params=("disk", "profile", "state", "finished_after", "finished_before", "format"),
                          content="text/csv"),
    "samples_csv": Operation("GET", "/api/v1/runs/{id}/samples.csv", content="text/csv"),
    "points_csv": Operation("GET", "/api/v1/sets/{id}/points.csv", content="text/csv"),
}  # fmt: skip


def drift(schema: dict[str, Any]) -> list[str]:
    """Every expectation the schema no longer meets, in words ("POST /api/v1/runs/: the answer has no field
    'state'"); [] when the client and the server agree."""
    problems = []
    for name, op in OPERATIONS.items():
        found = schema.get("paths", {}).get(op.path, {}).get(op.method.lower())
        where = f"{op.method} {op.path} ({name})"
        if found is None:
            problems.append(f"{where}: the schema has no such operation")
            continue
        taken = {p["name"] for p in found.get("parameters", []) if p.get("in") == "query"}
        problems += [f"{where}: no query parameter {p!r}" for p in op.params if p not in taken]
        if op.sends:
            body = found.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            fields = _properties(schema, body) if body else {}
            problems += [f"{where}: the body takes no field {f!r}" for f in op.sends if f not in fields]
        answer = found.get("responses", {}).get(str(op.status), {}).get("content", {}).get(op.content)
        if answer is None:
            problems.append(f"{where}: no {op.status} answer in {op.content}")
            continue
        problems += [f"{where}: the answer has no field {f!r}" for f in op.reads
                     if not _has(schema, answer.get("schema"), f)]  # fmt: skip
    return problems


def header_drift(schema: dict[str, Any]) -> list[str]:
    """As drift, for the headers the client sends and reads (the idempotency key and its replay flag)."""
    problems = []
    for name, op in OPERATIONS.items():
        found = schema.get("paths", {}).get(op.path, {}).get(op.method.lower()) or {}
        where = f"{op.method} {op.path} ({name})"
        taken = {p["name"].lower() for p in found.get("parameters", []) if p.get("in") == "header"}
        problems += [f"{where}: no request header {h!r}" for h in op.headers if h.lower() not in taken]
        answered = {h.lower() for h in found.get("responses", {}).get(str(op.status), {}).get("headers", {})}
        problems += [f"{where}: the answer has no header {h!r}" for h in op.answer_headers if h.lower() not in answered]
    return problems


def _resolve(schema: dict[str, Any], node: dict[str, Any] | None) -> dict[str, Any]:
    while node and "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    if node and len(node.get("allOf", [])) == 1:
        return _resolve(schema, node["allOf"][0])
    return node or {}


def _properties(schema: dict[str, Any], node: dict[str, Any] | None) -> dict[str, Any]:
    return dict(_resolve(schema, node).get("properties", {}))


def _has(schema: dict[str, Any], node: dict[str, Any] | None, dotted: str) -> bool:
    for part in dotted.split("."):
        name, each = part.removesuffix("[]"), part.endswith("[]")
        field = _properties(schema, node).get(name)
        if field is None:
            return False
        node = _resolve(schema, field)
        if each:
            if node.get("type") != "array":
                return False
            node = _resolve(schema, node.get("items"))
    return True
