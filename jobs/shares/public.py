"""The pages a share link opens, for anyone holding it and no account: /s/<token>/ and the two JSON endpoints its
charts read. Each answers only from the link's own target, through the same code as the team's pages
(jobs.disks.facts.disk_facts, jobs.results.compare.comparison, jobs.results.responses, jobs.sets.facts), while
the team's pages and /api/ keep requiring a sign-in.

Every answer here carries Referrer-Policy: no-referrer (the token is in the address and must not travel to the
vendor sites the limits link to), X-Robots-Tag: noindex and Cache-Control: no-store (a revoked link must stop
at once, not live on in a cache). Tokens are 256 random bits; even so, an address that asks for too many
unknown tokens is told to wait (GUESS_LIMIT), for unknown tokens only: its valid links keep opening."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Any

from axes.helpers import get_client_ip_address
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from jobs import clock
from jobs.disks.facts import disk_facts
from jobs.models import RunSet, ShareLink
from jobs.results import compare, responses
from jobs.sets import facts as set_facts
from jobs.sets import group_history, reading

# Unknown tokens one address may ask for in GUESS_WINDOW seconds before it gets 429s until the window ends.
GUESS_LIMIT, GUESS_WINDOW = 20, 600
HEADERS = {"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow", "Cache-Control": "no-store"}

View = Callable[..., HttpResponse]


def public(view: View) -> View:
    """A share link's view: the headers above on every answer, and the guard against guessing tokens."""

    @wraps(view)
    def wrapped(request: HttpRequest, token: str) -> HttpResponse:
        response = _guarded(view, request, token)
        for name, value in HEADERS.items():
            response[name] = value
        return response

    return wrapped


def _guarded(view: View, request: HttpRequest, token: str) -> HttpResponse:
    # The client's address as the sign-in lockout (django-axes) reads it, so one proxy setting serves both.
    # Only guesses wait: a link someone was sent opens from an address that has been guessing (many people
    # share one address behind a NAT or proxy). Its 256 random bits are what keep a guesser out, not the wait.
    key = f"share-guesses:{get_client_ip_address(request) or ''}"
    link = ShareLink.find(token)
    # One zone for the link's page and its JSON answers alike, whoever opens it: the creator's (stored with the
    # link), else UTC; the page says which (jobs/shares/base.html). jobs.middleware deactivates it after the answer.
    chosen = clock.choose(link.time_zone if link else "", None)
    request.clock = chosen  # type: ignore[attr-defined]  # read by jobs.context_processors for <body data-time-zone>
    timezone.activate(chosen.zone)
    if link is None:
        if (cache.get(key) or 0) >= GUESS_LIMIT:
            return _answer(request, "jobs/shares/unknown.html", 429, "Too many unknown links from your address; wait "
                           "ten minutes and check the address you were sent.")  # fmt: skip
        cache.add(key, 0, GUESS_WINDOW)
        cache.incr(key)
        return _answer(request, "jobs/shares/unknown.html", 404, "No link has this address: check that it was copied "
                       "whole (it ends in 43 letters, digits, - and _).")  # fmt: skip
    if link.state != "active":
        return _answer(request, "jobs/shares/gone.html", 410, _gone(link))
    try:
        return view(request, link, token)
    except Http404:
        # What the link showed was deleted since (a run or a disk of a comparison).
        reason = "Part of what this link showed was deleted since it was made; it shows nothing any more."
        return _answer(request, "jobs/shares/gone.html", 410, reason)


def _gone(link: ShareLink) -> str:
    if link.revoked_at is not None:
        return f"This link was revoked {_moment(link.revoked_at)}: it shows nothing any more."
    return f"This link expired {_moment(link.expires_at)}: it shows nothing any more."


def _moment(at: datetime) -> str:
    return clock.show(at, timezone.get_current_timezone(), clock.MINUTES)


def _answer(request: HttpRequest, template: str, status: int, reason: str) -> HttpResponse:
    if request.path.endswith(".json"):
        return JsonResponse({"error": reason}, status=status)
    return render(request, template, {"reason": reason}, status=status)


@require_GET
@public
def shared(request: HttpRequest, link: ShareLink, token: str) -> HttpResponse:
    """The disk page, the sweep's or the group's page or the comparison, read-only."""
    context: dict[str, Any] = {"share_link": link, "share_token": token}
    if link.disk is not None:
        context |= disk_facts(link.disk, request.GET, shared=True)
        template = "jobs/shares/disk.html"
    elif link.run_set is not None and link.run_set.kind == RunSet.Kind.GROUP:
        context |= _group(link.run_set)
        template = "jobs/shares/group.html"
    elif link.run_set is not None:
        # The default knee rule: the link shows the sweep as it was shared, with no form to ask for another.
        context |= set_facts.page(link.run_set)
        template = "jobs/shares/sweep.html"
    else:
        context |= compare.comparison(link.team, *_chosen(link), link.compare or {})
        context["distributions_url"] = f"distributions.json?{context['distributions']}"
        template = "jobs/shares/compare.html"
    response = render(request, template, context)
    link.note_view()
    return response


def _group(run_set: RunSet) -> dict[str, Any]:
    """A group's page as a link shows it: its numbers and each member's own figures, and of its ending only how many
    members succeeded (a failed member's reason names its host and may quote an address)."""
    context = set_facts.group_page(run_set)
    members = context["members"]
    succeeded = sum(member.state == "succeeded" for member in members)
    return context | {
        "limit": group_history.limit_of(run_set, members),
        "member_rows": [(member, group_history.member_figures(member)) for member in members],
        "ending": f"{succeeded} of {len(members)} members succeeded",
    }


@require_GET
@public
def shared_series(request: HttpRequest, link: ShareLink, token: str) -> HttpResponse:
    """The shared disk's or sweep's chart data, as /disks/<pk>/series.json and /sets/<pk>/series.json give it to
    the team (a sweep's under the default knee rule, as its shared page shows it)."""
    if link.run_set is not None and link.run_set.kind == RunSet.Kind.GROUP:
        return JsonResponse({"error": "This link shows a group; its numbers are on its page."}, status=404)
    if link.run_set is not None:
        return JsonResponse(set_facts.series(link.run_set, reading.result_of(link.run_set)))
    if link.disk is None:
        return JsonResponse({"error": "This link shows a comparison; it has no disk chart."}, status=404)
    return responses.disk_series(link.disk, request.GET)


@require_GET
@public
def shared_distributions(request: HttpRequest, link: ShareLink, token: str) -> HttpResponse:
    """The shared comparison's latency distributions: its own disks or runs, whatever the query names; only
    the profile (which of the disks' runs) may be chosen."""
    if link.compare is None:
        return JsonResponse({"error": f"This link shows a {link.get_kind_display().lower()}; it has no distributions."},
                            status=404)  # fmt: skip
    disk_ids, run_ids = _chosen(link)
    params = {"disks": ",".join(map(str, disk_ids)), "runs": ",".join(map(str, run_ids)),
              "profile": request.GET.get("profile", "")}  # fmt: skip
    return responses.distributions_answer(params, link.team)


def _chosen(link: ShareLink) -> tuple[list[int], list[int]]:
    query = link.compare or {}
    return list(query.get("disks", [])), list(query.get("runs", []))
