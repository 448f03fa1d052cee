"""The OpenAPI schema's error answers: every operation documents the 4xx statuses it can give, in the shape DRF
gives them, so a client (and Schemathesis) can tell an answered refusal from an undocumented one.

drf-spectacular documents only the success answer of each operation. The refusals come from the same few places
for every view (authentication, the team role, a missing object, the paginator, the request parser, the
Idempotency-Key header), so they are added here from what the operation is, not repeated on each view.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.plumbing import ResolvedComponent

from jobs.api import idempotency

# The JSON body of every refusal but a 400: {"detail": "what happened and what to do"}.
DETAIL = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
# A 400 names each field (or query parameter) it refuses with its messages, or says `detail`.
FIELD_ERRORS = {
    "type": "object",
    "additionalProperties": {},
    "description": "Each refused field or query parameter with a list of messages; `detail` when no field is at fault.",
}
BODY_METHODS = {"POST", "PUT", "PATCH"}


class AutoSchema(openapi.AutoSchema):
    def _get_response_bodies(self, direction: openapi.Direction = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for code, description in self._refusals().items():
            schema = FIELD_ERRORS if code == "400" else DETAIL
            component = ResolvedComponent(
                name="FieldErrors" if code == "400" else "Refusal",
                type=ResolvedComponent.SCHEMA,
                object=schema,
                schema=schema,
            )
            self.registry.register_on_missing(component)
            responses.setdefault(code, {"content": {"application/json": {"schema": component.ref}}})
            responses[code].setdefault("description", description)
        return responses

    def _refusals(self) -> dict[str, str]:
        """The refusals this operation can answer with, by status code."""
        paginated = self._is_list_view() and self._get_paginator() is not None
        takes_body = self.method in BODY_METHODS  # an action without a body still refuses with 400
        takes_query = paginated or any(p.get("in") == "query" for p in self._get_parameters())
        refusals = {}
        if takes_body or takes_query:
            refusals["400"] = "A field or query parameter was refused; the body names each one and why."
        refusals["401"] = "No valid token or session: send `Authorization: Bearer <token>`."
        refusals["403"] = "Your role in the team does not allow this (owners change hosts, members and roles)."
        if "{" in self.path or paginated:
            refusals["404"] = "No such object in your team, or no such page of the list."
        if self.method == "DELETE":
            refusals["409"] = "Still in use elsewhere; the body says where. Nothing was deleted."
        if any(p.get("in") == "header" and p.get("name") == idempotency.HEADER for p in self._get_parameters()):
            refusals["409"] = (
                f"Another request with this {idempotency.HEADER} was answered at the same moment: send it again."
            )
            refusals["422"] = (
                f"This {idempotency.HEADER} was used for a request with a different body: use a new key for it."
            )
        if takes_body and self._get_request_body():
            refusals["413"] = "The body is over the size the server reads; the body says the limit and the way round."
            refusals["415"] = "The body's Content-Type is not one this operation reads (JSON; multipart for files)."
        return refusals
