"""The sign-in backend: Django's ModelBackend, whose signed-in user comes with their Preferences in the same
query, because every page reads the person's time zone (jobs.middleware) and a JSON endpoint polled every 2 s
should not pay a query for it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class ModelBackendWithPreferences(ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        users = get_user_model()._default_manager.select_related("preferences")
        try:
            user = users.get(pk=user_id)
        except get_user_model().DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
