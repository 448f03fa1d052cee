from __future__ import annotations

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    """The Celery app, created on first use: every Django process creates it as its apps load
    (jobs/apps.py), and a process that is not Django (./bw run's supervisor, benchweb/stack.py) never pays for it.
    `celery -A benchweb` finds it in benchweb.celery."""
    if name == "celery_app":
        from benchweb.celery import app

        return app
    raise AttributeError(f"module 'benchweb' has no attribute {name!r}")
