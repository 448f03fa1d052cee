"""Unique names within a team (or a host), checked where people type them."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet


def name_taken(queryset: QuerySet, instance: Model | None, **lookup: Any) -> bool:
    """Whether a row other than instance already has this name. Forms and serializers ask it themselves: the
    unique constraints include a field they do not show (team, host), so Django and DRF skip them."""
    return queryset.filter(**lookup).exclude(pk=instance.pk if instance else None).exists()
