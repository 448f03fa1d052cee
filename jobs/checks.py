"""Start-up checks that tell an operator what will go wrong before it does."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register


@register()
def field_keys_are_shared(app_configs: Any, **kwargs: Any) -> list[Warning]:
    uses_shared_database = settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3"
    if uses_shared_database and not settings.FIELD_KEYS_FROM_ENV:
        return [
            Warning(
                "Credentials are encrypted with a key generated into var/field_keys on this machine only.",
                hint="With a shared database, set BENCHWEB_FIELD_KEYS to the same keys on every web and worker "
                "machine, or credentials saved by one cannot be read by another.",
                id="benchweb.W001",
            )
        ]
    return []
