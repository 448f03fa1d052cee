"""What every concept's API shares: team scoping, JSON-typed fields and id checks (the error format is in
jobs/api/errors.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet
from rest_framework import permissions, serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.utils import html
from rest_framework.utils.serializer_helpers import BindingDict

from jobs import paths
from jobs.api.auth import Access, access
from jobs.api.permissions import TeamRole
from jobs.models import Membership, Team

MAX_ID = 2**63 - 1


ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}


class TeamViewSet(viewsets.GenericViewSet):
    """The caller's team and role, and role checks on writes (`change_role`, per action `change_roles`)."""

    permission_classes = [permissions.IsAuthenticated, TeamRole]
    change_role = Membership.Role.MEMBER

    @property
    def access(self) -> Access:
        found = access(self.request)
        assert found is not None  # TeamRole refused the request otherwise
        return found

    @property
    def team(self) -> Team:
        return self.access.team

    @property
    def fake(self) -> bool:
        # drf-spectacular builds views without a request to read their querysets' models.
        return getattr(self, "swagger_fake_view", False)


def parse_id(value: str, field: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) <= MAX_ID:
        raise ValidationError({field: [f"{value!r} is not an id; give a whole number such as 3."]})
    return int(value)


PLACEHOLDER = "••••"


def team_of(serializer: serializers.Field | serializers.Serializer) -> Team:
    found = access(serializer.context["request"])
    assert found is not None  # TeamRole refused the request otherwise
    return found.team


def checked_path(value: str, *, field: str, home: bool = False, command: bool = False) -> str:
    try:
        return paths.check(value, field=field, home=home, command=command)
    except paths.PathError as exc:
        raise serializers.ValidationError(str(exc)) from exc


# A field's class, the JSON values it takes, and how to ask for them. An integer may come as 5.0 (JSON Schema
# calls that an integer too), never as "5"; a string never as a number; a boolean only as true or false.
_JSON_TYPES: tuple[tuple[type[serializers.Field], Callable[[Any], bool], str], ...] = (
    (serializers.BooleanField, lambda v: isinstance(v, bool), "true or false"),
    (
        serializers.IntegerField,
        lambda v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
        "a whole number",
    ),
    (serializers.CharField, lambda v: isinstance(v, str), "a string"),
)


class JsonTypes:
    """JSON bodies keep the types the schema gives: DRF alone reads "yes" as true, "5" as 5 and 5 as "5", so a
    request the schema calls wrong would be accepted. A form can only send text and keeps DRF's reading."""

    fields: BindingDict

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and not html.is_html_input(data):
            errors = {
                name: [f"Give {words}, not {json.dumps(data[name])[:40]}."]
                for name, field in self.fields.items()
                if name in data and data[name] is not None and not field.read_only
                for field_class, fits, words in _JSON_TYPES
                if isinstance(field, field_class) and not fits(data[name])
            }
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


class ModelSerializer(JsonTypes, serializers.ModelSerializer):
    pass


class TeamScoped(serializers.PrimaryKeyRelatedField):
    """An id of one of the caller's team's objects; another team's id reads as 'does not exist'."""

    def __init__(self, *, presets: bool = False, **kwargs: Any) -> None:
        self.presets = presets
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        queryset = super().get_queryset()
        assert queryset is not None  # every TeamScoped field is given its queryset
        request = self.context.get("request")
        found = access(request) if request else None
        if found is None:
            return queryset.none()
        if self.presets:
            return queryset.filter(Q(team=found.team) | Q(team__isnull=True))
        return queryset.filter(team=found.team)
