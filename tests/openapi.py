"""benchweb's OpenAPI schema as Schemathesis reads it, for the tests that check answers against it.

Loaded from the app itself, in process, when a test module imports this (Django is set up by then). The coverage
phase (hundreds of boundary cases per operation) is left to a manual `schemathesis run`; the tests draw a bounded,
derandomized set. A request through the WSGI handler must not close the test's connection: use the
`keep_the_test_connection` fixture (tests/conftest.py)."""

from __future__ import annotations

import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from schemathesis.config import SchemathesisConfig

CONFIG = SchemathesisConfig.from_dict({"phases": {"coverage": {"enabled": False}}})
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", WSGIHandler(), config=CONFIG)


def json_schema(node: object) -> object:
    """OpenAPI 3.0's `nullable` as JSON Schema says it (null among the types), for jsonschema to validate with."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    found = {key: json_schema(value) for key, value in node.items() if key != "nullable"}
    if not node.get("nullable"):
        return found
    return {"anyOf": [found, {"type": "null"}]}
