"""The API's JSON parser: DRF's, refusing a body nested deeper than jobs/nesting.py allows with a 400 that says
so, not the server error of json's RecursionError. A module of its own: DRF imports it while its views load (the setting
DEFAULT_PARSER_CLASSES), so it imports nothing of DRF's views.
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from jobs import errors, nesting


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(errors.TOO_DEEP) from exc
        if nesting.nests_too_deep(data):
            raise ParseError(errors.TOO_DEEP)
        return data
