"""How the API answers what it refuses: DRF's JSON errors, plus benchweb's own refusals in the same shape.

The refusals come from below the API: a request Django would not read (jobs/errors.py `refusal`), a use case's
`FieldRefused` (a field-level 400), a model's ValidationError, and a delete the database protects (409).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from jobs import errors


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's JSON errors, plus the domain's refusals as field-level 400s."""
    request = context.get("request")
    if request is not None and (refused := errors.refusal(request, exc)):
        return Response({"detail": refused[1]}, status=refused[0])  # a body over the limit: 413, not Django's HTML
    if isinstance(exc, errors.FieldRefused):
        exc = ValidationError({exc.field: [str(exc)]})
    elif isinstance(exc, DjangoValidationError):
        exc = django_errors(exc)
    elif isinstance(exc, ProtectedError):
        users = ", ".join(sorted({str(obj) for obj in exc.protected_objects})[:5])
        return Response(
            {"detail": f"This is still used ({users}); remove it from there first. Nothing was deleted."},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)


def django_errors(exc: DjangoValidationError) -> serializers.ValidationError:
    if hasattr(exc, "error_dict"):
        return serializers.ValidationError(
            {k: [str(m) for e in v for m in e.messages] for k, v in exc.error_dict.items()}
        )
    return serializers.ValidationError({"non_field_errors": exc.messages})
