"""record(): the one way to write the audit log."""

from __future__ import annotations

from typing import Any

from audit.models import AuditEvent

# Keys that must never reach the log, whatever a caller passes.
_SECRET_WORDS = ("password", "secret", "private_key", "passphrase", "token_value", "key_material")


def record(team: Any, actor: Any, action: str, obj: Any = None, **details: Any) -> AuditEvent:
    for key in details:
        if any(word in key for word in _SECRET_WORDS):
            raise ValueError(f"audit details must not carry secrets: {key!r}")
    user = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        team=team,
        actor=user,
        actor_name=user.get_username() if user else "",
        action=action,
        object_type=type(obj).__name__.lower() if obj is not None else "",
        object_id=str(getattr(obj, "pk", "") or ""),
        object_repr=str(obj)[:200] if obj is not None else "",
        details=details,
    )
