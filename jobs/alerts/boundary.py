"""The alert path's one "never raise" boundary.

Alerts are judged (jobs/alerts/evaluate.py), moved through their states (lifecycle.py) and handed to the team's
channels (jobs/notify/delivery.py) after somebody else's work has committed: a run finished, a fire skipped, a
key refused, a person acknowledged. Nobody is left to tell of a failure then, and that work must not fail for it.
So the steps raise as any code does, and each way into the path passes here, the one place that catches:

- `after_commit`: a hook, once the caller's transaction commits (a run's end, the tick, a host key, an import),
  and an alert's event handed to its channels once the move commits (lifecycle.announce);
- `never_raise`, at once: the minute's sweep, one disk or alert at a time, and notify's `publish`, which keeps
  its promise never to raise to any caller (jobs/notify/__init__.py).

Whatever a step raises is logged with its traceback, and the caller carries on."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

log = logging.getLogger(__name__)


def after_commit(step: Callable[..., Any], *args: Any, failure: str = "") -> None:
    """Run `step(*args)` once the caller's transaction commits (at once outside one), never raising."""
    transaction.on_commit(lambda: never_raise(step, *args, failure=failure))


def never_raise(step: Callable[..., Any], *args: Any, failure: str = "") -> None:
    """Run `step(*args)`; what it raises is logged as `failure` (by default: the step could not be judged)."""
    try:
        step(*args)
    except Exception:
        log.exception("alerts: %s", failure or f"{step.__name__}{args!r} could not be judged")
