"""The command-line client (clients/python) and the server agree: every operation, parameter and field the client
uses is in the server's OpenAPI schema, and the client's pinned dependencies are the project's pins."""

from __future__ import annotations

import copy
import re
import tomllib

from benchweb_client import contract

from tests.client.schema import server_schema
from tests.stacks import ROOT


def test_the_server_schema_has_everything_the_client_calls_sends_and_reads():
    assert contract.drift(server_schema()) == []


def test_a_drifted_schema_fails_naming_the_operation_and_the_field():
    drifted = copy.deepcopy(server_schema())
    del drifted["components"]["schemas"]["RunDetail"]["properties"]["limits_snapshot"]
    del drifted["components"]["schemas"]["RunRequestRequest"]["properties"]["profile"]
    drifted["paths"]["/api/v1/compare/stats/"]["get"]["parameters"] = [
        p for p in drifted["paths"]["/api/v1/compare/stats/"]["get"]["parameters"] if p["name"] != "split"
    ]
    del drifted["paths"]["/api/v1/runs/{id}/cancel/"]

    problems = contract.drift(drifted)

    assert "POST /api/v1/runs/ (run_create): the answer has no field 'limits_snapshot'" in problems
    assert "GET /api/v1/runs/{id}/ (run): the answer has no field 'limits_snapshot'" in problems
    assert "POST /api/v1/runs/ (run_create): the body takes no field 'profile'" in problems
    assert "GET /api/v1/compare/stats/ (compare): no query parameter 'split'" in problems
    assert "POST /api/v1/runs/{id}/cancel/ (run_cancel): the schema has no such operation" in problems
    assert len(problems) == 5, problems


def test_a_nested_field_is_followed_through_references_and_arrays():
    drifted = copy.deepcopy(server_schema())
    del drifted["components"]["schemas"]["Verdict"]["properties"]["kind"]
    assert contract.drift(drifted) == [
        "POST /api/v1/runs/ (run_create): the answer has no field 'verdicts[].kind'",
        "GET /api/v1/runs/{id}/ (run): the answer has no field 'verdicts[].kind'",
    ]


def test_the_clients_dependencies_are_pinned_as_the_project_pins_them():
    client = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    pins = dict(
        re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line).groups()  # type: ignore[union-attr]
        for path in ("requirements.txt", "requirements-dev.txt")
        for line in (ROOT / path).read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert client["dependencies"], "the client needs httpx and click"
    for requirement in client["dependencies"]:
        name, version = requirement.split("==")
        assert pins.get(name) == version, f"{requirement}: the project pins {name}=={pins.get(name)}"


def test_the_server_schema_documents_the_idempotency_headers_the_client_sends_and_reads():
    assert contract.header_drift(server_schema()) == []


def test_a_schema_without_the_idempotency_headers_fails_naming_them():
    bare = copy.deepcopy(server_schema())
    for path in ("/api/v1/runs/", "/api/v1/sets/"):
        operation = bare["paths"][path]["post"]
        operation["parameters"] = [p for p in operation.get("parameters", []) if p.get("in") != "header"]
        operation["responses"]["201"].pop("headers", None)
    assert contract.header_drift(bare) == [
        "POST /api/v1/runs/ (run_create): no request header 'Idempotency-Key'",
        "POST /api/v1/runs/ (run_create): the answer has no header 'Idempotent-Replayed'",
        "POST /api/v1/sets/ (set_create): no request header 'Idempotency-Key'",
        "POST /api/v1/sets/ (set_create): the answer has no header 'Idempotent-Replayed'",
    ]
