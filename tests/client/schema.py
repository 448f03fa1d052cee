"""The server's OpenAPI schema as GET /api/schema/?format=json serves it, made in-process (drf-spectacular), once."""

from __future__ import annotations

import functools
import json
from typing import Any


@functools.cache
def server_schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return dict(json.loads(OpenApiJsonRenderer().render(schema)))
