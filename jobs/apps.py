from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_presets(sender: AppConfig, **kwargs: Any) -> None:
    from jobs.models import Profile
    from jobs.presets import sync_presets

    sync_presets(Profile)


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "benchweb"

    def ready(self) -> None:
        from jobs import checks  # noqa: F401  (registers the system checks)
        from jobs.metrics import (
            grafana,  # noqa: F401  (connects the push of change points and annotations)
            tally,  # noqa: F401  (connects taking a deleted disk's runs off the tally)
        )

        post_migrate.connect(_sync_presets, sender=self)
