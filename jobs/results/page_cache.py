"""The rendered, result-derived parts of the overview (its Disks table) and of a disk page (its Compliance and
Stability card), kept in Django's cache between results (issue 34: the two pages' CPU saturated the web processes).

Profiled on 200 disks x 120 results, most of either page's CPU is Django's template engine drawing these parts (a
sparkline each disk, a heat map of 2 x 7 x 24 cells) and the queries that feed them; the rest of each page (running
runs, their progress, forms, alerts) is cheap and always drawn afresh.

A part is kept under a key made of everything it is drawn from, read by one cheap aggregate query each view:

- the disks drawn (their ids, labels, hosts, sites and every spec field: a changed spec is a changed limit);
- the results drawn from, as (count, largest run id, sum of IOPS, latest finish) of their RunResult rows: a new
  result raises the largest id, a deleted run (its result goes with it) lowers the count, a result recorded again
  with other figures changes the sum;
- the query string asked, the viewer's time zone, and the current minute: the "now"-relative texts and windows (the
  last 30 days, the last 7) are drawn as of that minute, so a kept part is at most a minute old in those, never in
  its results.

The key is computed from the database, not bumped by the writers, so that it holds whatever writes (a Celery
worker storing a result, the admin, an import, a bulk delete) and whichever web process serves the page: there is
no version to forget to bump, and a per-process cache (the default local-memory one) is enough. Nothing is
invalidated: a changed key is simply another entry, and the old one ages out (KEEP_S) or is evicted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, QuerySet, Sum
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from jobs.models import SPEC_FIELDS, Disk, RunResult

# A kept part lives this long at most: its key holds the minute, so after that it is never asked for again.
KEEP_S = 120


def results_stamp(results: QuerySet[RunResult]) -> tuple[Any, ...]:
    """What changes whenever a result drawn from `results` is added, deleted or recorded again."""
    found = results.aggregate(n=Count("run_id"), last=Max("run_id"), iops=Sum("total_iops"), at=Max("finished_ms"))
    return (found["n"], found["last"], found["iops"], found["at"])


def disks_stamp(disks: Iterable[Disk]) -> tuple[Any, ...]:
    """The drawn disks as they are now; each must have its host loaded (select_related)."""
    fields = ("pk", "label", "host_id", *SPEC_FIELDS.values())
    return tuple((*(getattr(d, name) for name in fields), d.host.name, d.host.site) for d in disks)


def kept(part: str, stamp: Iterable[Any], draw: Callable[[], str], now: datetime | None = None) -> SafeString:
    """The part drawn by `draw`, or the one kept under the same stamp, the viewer's time zone and minute."""
    now = now or timezone.now()
    moment = (timezone.get_current_timezone_name(), now.replace(second=0, microsecond=0).isoformat())
    key = f"page-part:{part}:" + hashlib.sha256(repr((*stamp, *moment)).encode()).hexdigest()
    html = cache.get(key)
    if html is None:
        html = draw()
        cache.set(key, html, KEEP_S)
    return mark_safe(html)  # noqa: S308  (HTML the templates drew, escaped there)
