from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "jobs.api"
    label = "api"  # tables api_*, migrations in jobs/api/migrations
    verbose_name = "REST API"
    default_auto_field = "django.db.models.BigAutoField"
