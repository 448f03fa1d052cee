"""Idempotency keys (the IETF httpapi draft's `Idempotency-Key` header): a client that sends one with a request that
starts something (a run, a set) may send the request again, after a timeout or a CI retry, and gets what the first
one started instead of a second start.

A key is the team's and the endpoint's: another team's, or the same key on another endpoint, never matches. It is
kept 24 hours after its first use (IdempotencyKey.KEPT); past that it is forgotten (the daily prune deletes it) and
may start something anew.
The first request claims the key by inserting its row in the transaction that starts the object, so the two commit
together or not at all: a request refused (a 400) leaves no key behind. A second request with the key while the
first is under way waits on the unique index (PostgreSQL) or the database lock (SQLite's IMMEDIATE transactions)
until the first commits, then answers with what it started.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.api.models import IdempotencyKey
from jobs.models import Team

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_LENGTH = 255
KEPT_TEXT = IdempotencyKey.KEPT_TEXT
# Visible ASCII and spaces, with at least one visible character; the draft's quoted form ("...") is read as the
# string it quotes.
_PRINTABLE = re.compile(r"[ -~]*[!-~][ -~]*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\["\\])*)"')

PARAMETERS = [
    OpenApiParameter(
        HEADER,
        {"type": "string", "minLength": 1, "maxLength": MAX_LENGTH, "pattern": f"^{_PRINTABLE.pattern}$"},
        location=OpenApiParameter.HEADER,
        description="Optional: a key of your own for this request (a UUID, say), up to 255 printable ASCII "
        f"characters. Sent again with the same body within {KEPT_TEXT}, the request starts nothing new: it answers "
        f"what the first one started, as it is now, with `{REPLAYED}: true`. The same key with a different body is "
        "a 422; a key is your team's and this endpoint's only. A request refused with a 400 keeps no key.",
    ),
    OpenApiParameter(
        REPLAYED,
        {"type": "string", "enum": ["true"]},
        location=OpenApiParameter.HEADER,
        response=[201],
        description=f"`true` when this answer is a replay: a request with the same `{HEADER}` started it earlier.",
    ),
]


class KeyReused(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY


class KeyInFlight(APIException):
    status_code = status.HTTP_409_CONFLICT


def key_of(request: Request) -> str | None:
    """The request's idempotency key; None when it sent none. One that is empty, too long or not printable ASCII is
    refused naming the header."""
    value = request.headers.get(HEADER)
    if value is None:
        return None
    if len(value) > MAX_LENGTH:
        raise ValidationError({HEADER: [f"Give {HEADER} as at most {MAX_LENGTH} characters (a UUID is 36); got "
                                        f"{len(value)}. Nothing was started."]})  # fmt: skip
    if not _PRINTABLE.fullmatch(value):
        raise ValidationError({HEADER: [f"Give {HEADER} as printable ASCII characters, not all of them blank (a "
                                        "UUID, say). Nothing was started."]})  # fmt: skip
    value = value.strip()
    if quoted := _QUOTED.fullmatch(value):
        value = re.sub(r"\\(.)", r"\1", quoted[1])
        if not value.strip():
            raise ValidationError({HEADER: [f'Give {HEADER} a key inside its quotes, not "". Nothing was started.']})
    return value


def fingerprint_of(data: Any) -> str:
    """SHA-256 of the body as parsed: the same JSON in another key order or spacing is the same request."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def create_once(
    request: Request,
    team: Team,
    objects: QuerySet,
    start: Callable[[], models.Model],
    show: Callable[[Any], Any],
) -> Response:
    """A 201 with `show(start())`; with an idempotency key seen before, `show` of what it started (with
    `Idempotent-Replayed: true`) and no start. `objects` are the team's objects of what `start` makes."""
    key = key_of(request)
    if key is None:
        return Response(show(start()), status=status.HTTP_201_CREATED)
    endpoint = request.path_info
    fingerprint = fingerprint_of(request.data)
    if (replay := _replay(team, endpoint, key, fingerprint, objects, show)) is not None:
        return replay
    with transaction.atomic():
        claimed = _claim(team, endpoint, key, fingerprint, kind=objects.model._meta.model_name)
        if claimed is not None:
            claimed.object_id = start().pk
            claimed.save(update_fields=["object_id"])
    if claimed is not None:
        # Read again after the commit: what the start sent on commit (a launch) may have changed it since.
        return Response(show(objects.get(pk=claimed.object_id)), status=status.HTTP_201_CREATED)
    if (replay := _replay(team, endpoint, key, fingerprint, objects, show)) is not None:
        return replay
    # Only when what the other request started was deleted meanwhile (and the key with it).
    raise KeyInFlight(f"A request with this {HEADER} was answered at the same time as this one: send it again.")


def _held(team: Team, endpoint: str, key: str) -> QuerySet:
    return IdempotencyKey.objects.filter(team=team, endpoint=endpoint, key=key)


def _claim(team: Team, endpoint: str, key: str, fingerprint: str, kind: str) -> IdempotencyKey | None:
    """The key's row, inserted in the caller's transaction; None when another request with the key committed first
    (PostgreSQL waits for it on the unique index until then). An expired row of the key gives way."""
    _held(team, endpoint, key).filter(created_at__lte=timezone.now() - IdempotencyKey.KEPT).delete()
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(
                team=team, endpoint=endpoint, key=key, fingerprint=fingerprint, kind=kind
            )
    except IntegrityError:
        return None


def _replay(
    team: Team, endpoint: str, key: str, fingerprint: str, objects: QuerySet, show: Callable[[Any], Any]
) -> Response | None:
    """The answer to a key used before: what it started, as it is now; None for a key not used in the last 24 hours
    or whose object has since been deleted (with its disk): then the request is answered as a new one."""
    used = _held(team, endpoint, key).filter(created_at__gt=timezone.now() - IdempotencyKey.KEPT).first()
    if used is None:
        return None
    if used.fingerprint != fingerprint:
        raise KeyReused(
            f"This {HEADER} was used at {used.created_at:%Y-%m-%d %H:%M:%S} UTC for a request with a different body; "
            f"nothing was started. Use a new {HEADER} for a different request (a key is kept {KEPT_TEXT})."
        )
    made = objects.filter(pk=used.object_id).first()
    if made is None:
        IdempotencyKey.objects.filter(pk=used.pk).delete()
        return None
    return Response(show(made), status=status.HTTP_201_CREATED, headers={REPLAYED: "true"})
