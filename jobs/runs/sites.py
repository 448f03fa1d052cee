"""Which running workers serve each site, and the worker that serves every site.

A host's site has two meanings. For analysis, the hosts of one site are compared for drops they share (the
disk's Stability card). For routing, the host's runs go to the Celery queue `site.<name>` (`queue_for`),
and only a worker that consumes that queue runs them. A worker serves a site when it was started with
`-Q site.<name>`, or when it serves every site (BENCHWEB_WORKER_EVERY_SITE, which `./bw run` sets for its one
worker): that worker consumes the default queue plus `site.<name>` for every site a host has, and looks at the
hosts again every EVERY_SITE_LOOK_S, so a site set later is served within seconds, and after a restart too.
The database says which sites exist, so no missed message can leave one unserved.

Routing stays as it is when a site has no worker (its runs do not fall back to the default queue): a site's
worker is often the one machine that can reach its hosts, so a run waits, says so at once, and can be cancelled.

Whether a worker serves a queue is asked of the workers themselves (a broadcast, messages.SERVES, that waits its
whole ASK_TIMEOUT); one answer is kept in this process for ASK_EVERY, as jobs/metrics/workers.py keeps its ping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections

from jobs import messages
from jobs.models import Host

log = logging.getLogger(__name__)

ASK_TIMEOUT = 0.5
# Asked again this long when no worker answered within ASK_TIMEOUT: a busy worker answers late, and "none is
# running" must not be said of one that is (seen in CI with two test sessions at once).
ASK_AGAIN_TIMEOUT = 2.0
ASK_EVERY = 10.0
EVERY_SITE_LOOK_S = 2.0


@dataclass(frozen=True)
class Workers:
    """One answer of the running workers: their queues and the names of those serving every site, or None
    with the reason when the broker could not be reached."""

    at: float
    queues: dict[str, frozenset[str]] | None
    every_site: frozenset[str] = frozenset()
    error: str = ""

    def serving(self, queue: str) -> list[str]:
        """The workers that run what is sent to `queue`: its consumers, and for a site queue the workers that
        serve every site."""
        if self.queues is None:
            return []
        every = self.every_site if queue.startswith("site.") else frozenset()
        return sorted(name for name, queues in self.queues.items() if queue in queues or name in every)


_lock = threading.Lock()
_last: Workers | None = None


def workers() -> Workers:
    """The last answer, asking afresh when it is ASK_EVERY old."""
    global _last
    with _lock:
        now = time.time()
        if _last is None or now - _last.at >= ASK_EVERY:
            _last = _ask(now)
        return _last


def forget() -> None:
    """Drop the kept answer, so that the next question asks the workers (tests, which start and stop workers)."""
    global _last
    with _lock:
        _last = None


def _ask(now: float) -> Workers:
    try:
        answers = messages.ask_workers(messages.SERVES, ASK_TIMEOUT)
        if not answers:
            answers = messages.ask_workers(messages.SERVES, ASK_AGAIN_TIMEOUT)
    except Exception as exc:  # kombu's OperationalError, an OSError, a Redis error: the broker is unreachable
        return Workers(now, None, error=f"{exc.__class__.__name__}: {exc}")
    queues, every = {}, set()
    for name, answer in answers.items():
        if isinstance(answer, dict):
            queues[name] = frozenset(answer.get("queues") or ())
            if answer.get("every_site"):
                every.add(name)
    return Workers(now, queues, frozenset(every))


def queue_for(site: str) -> str:
    """The Celery queue of a host's site: `site.<name>` (workers near those hosts listen with -Q), or the
    default queue for hosts without a site."""
    return f"site.{site}" if site else settings.CELERY_TASK_DEFAULT_QUEUE


def start_command(site: str) -> str:
    return f"celery -A benchweb worker -Q {queue_for(site)}"


def waiting_text(site: str) -> str:
    """A queued run's explanation when no running worker serves its host's site."""
    return (
        f"waiting for a worker of site {site}: none is running; start one with `{start_command(site)}` (near the "
        f"host, against the same database and broker) or clear the host's site"
    )


def unserved(site: str) -> bool:
    """Whether the workers said, lately, that none of them serves `site` (False when they could not be asked,
    or for the default queue, which every stack runs a worker for)."""
    if not site:
        return False
    answer = workers()
    return answer.queues is not None and not answer.serving(queue_for(site))


@dataclass(frozen=True)
class SiteStatus:
    """What the host form and page say about who runs a site's work."""

    site: str
    queue: str
    workers: list[str]
    every_site: list[str]
    known: bool
    error: str

    @property
    def served(self) -> bool:
        return bool(self.workers)

    @property
    def text(self) -> str:
        if not self.known:
            return f"Could not ask the workers which of them serve {self.queue} (the broker: {self.error})."
        if not self.served:
            if not self.site:
                return f"No running worker consumes the default queue {self.queue}: runs wait until one starts."
            return (
                f"No running worker serves site {self.site}: this host's runs would wait in queue {self.queue}. "
                f"Start one near the host with `{start_command(self.site)}`, or leave the site empty."
            )
        named = ", ".join(self.workers)
        if self.site and set(self.workers) <= set(self.every_site):
            return f"Runs go to queue {self.queue}; {named} serves every site and takes it within seconds."
        return f"Runs go to queue {self.queue}, served by {named}."

    def as_dict(self) -> dict[str, object]:
        return {"site": self.site, "queue": self.queue, "workers": self.workers, "every_site": self.every_site,
                "known": self.known, "served": self.served, "text": self.text}  # fmt: skip


def status(site: str) -> SiteStatus:
    answer = workers()
    queue = queue_for(site)
    return SiteStatus(
        site=site,
        queue=queue,
        workers=answer.serving(queue),
        every_site=sorted(answer.every_site),
        known=answer.queues is not None,
        error=answer.error,
    )


def browser_data() -> dict[str, object]:
    """What the host form's script needs to say, as the site is typed, which workers would serve it."""
    answer = workers()
    return {
        "default_queue": settings.CELERY_TASK_DEFAULT_QUEUE,
        "known": answer.queues is not None,
        "error": answer.error,
        "queues": {name: sorted(queues) for name, queues in (answer.queues or {}).items()},
        "every_site": sorted(answer.every_site),
    }


def site_queues() -> set[str]:
    """The queue of every site a host has."""
    sites = Host.objects.exclude(site="").order_by().values_list("site", flat=True).distinct()
    return {queue_for(site) for site in sites}


def serve_every_site(worker: str, consuming: Iterable[str], stop: threading.Event) -> None:
    """The loop of a worker that serves every site (BENCHWEB_WORKER_EVERY_SITE): every EVERY_SITE_LOOK_S, ask
    this worker to consume the queue of every site a host has that it does not consume yet. Runs in its own
    thread until `stop` is set; a database or broker that is away is tried again at the next look."""
    added = set(consuming)
    while not stop.is_set():
        try:
            for queue in sorted(site_queues() - added):
                if messages.consume(queue, worker, timeout=2.0):
                    added.add(queue)
                    log.info("serving every site: %s now consumes %s", worker, queue)
        except Exception:  # the database or broker is away: look again later
            log.warning("serving every site: could not look at the sites; trying again", exc_info=True)
        finally:
            close_old_connections()
        stop.wait(EVERY_SITE_LOOK_S)
