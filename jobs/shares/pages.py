"""The team's Share links page: the links made from the disk, sweep, group and Compare pages ("Share…"), who made
each, how often it was opened, and Revoke. A new link's address is shown on this page once, in the answer to the POST
that made it; only its digest is kept (jobs/models/sharing.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from jobs import access, links
from jobs.models import ShareLink, Team
from jobs.shares import sharing
from jobs.shares.forms import ShareForm


@login_required
def share_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    shown_once, problem = "", ""
    if request.method == "POST":
        access.require_change(request, team)
        try:
            shown_once = _create(request, team)
        except sharing.ShareRefused as exc:
            problem = f"No link was made. {exc}"
    links = ShareLink.objects.filter(team=team).select_related("disk__host", "run_set__disk", "created_by")
    for link in links:
        link.describe = sharing.describe(link)  # type: ignore[attr-defined]  # for the table only
        link.page_url = _page_of(link)  # type: ignore[attr-defined]
    context = {
        "links": links,
        "shown_once": shown_once,
        "problem": problem,
        "can_change": access.can_change(request, team),
    }
    response = render(request, "jobs/shares/list.html", context, status=400 if problem else 200)
    response["Cache-Control"] = "no-store"  # the page that shows a new link's address must not be cached
    return response


def _page_of(link: ShareLink) -> str:
    """The team's own page the link shows read-only: the disk page, the sweep's, or the Compare page with its query."""
    if link.disk is not None:
        return reverse("disk_detail", args=[link.disk.pk])
    if link.run_set is not None:
        return reverse("set_detail", args=[link.run_set.pk])
    query = {key: ",".join(map(str, value)) if isinstance(value, list) else value
             for key, value in (link.compare or {}).items()}  # fmt: skip
    return f"{reverse('compare')}?{urlencode(query)}"


def _create(request: HttpRequest, team: Team) -> str:
    """Make the link the Share… form asks for; its full address, shown once."""
    form = ShareForm(request.POST)
    if not form.is_valid():
        raise sharing.ShareRefused("expires_in_days", str(form.errors["expires_in_days"][0]))
    days = form.cleaned_data["expires_in_days"]
    if request.POST.get("kind") == ShareLink.Kind.DISK:
        disk_id = request.POST.get("disk", "")
        disk = access.disk(request, int(disk_id)) if disk_id.isdigit() else None
        if disk is None:
            raise sharing.ShareRefused("disk", "Say which disk to share: open its page and use Share… there.")
        link, token = sharing.create(team, request.user, days=days, disk=disk, via="page", page_zone=_zone(request))
    elif request.POST.get("kind") in (ShareLink.Kind.SWEEP, ShareLink.Kind.GROUP):
        set_id = request.POST.get("run_set", "")
        run_set = access.run_set(request, int(set_id)) if set_id.isdigit() else None
        if run_set is None:
            raise sharing.ShareRefused("run_set", "Say which sweep to share: open its page and use Share… there.")
        link, token = sharing.create(team, request.user, days=days, run_set=run_set, via="page",
                                     page_zone=_zone(request))  # fmt: skip
    else:
        query = sharing.compare_query(QueryDict(request.POST.get("query", "")), team)
        link, token = sharing.create(team, request.user, days=days, compare=query, via="page", page_zone=_zone(request))
    messages.success(request, f"Link to {sharing.describe(link)} made; copy its address now, it is shown once.")
    return links.absolute(reverse("shared", args=[token]), request)


def _zone(request: HttpRequest) -> str:
    """The zone the creator's page was drawn in (jobs.middleware): the link's pages use it."""
    chosen = getattr(request, "clock", None)
    return chosen.name if chosen is not None else ""


@login_required
@require_POST
def share_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    team = access.team(request)
    access.require_change(request, team)
    link = get_object_or_404(ShareLink, pk=pk, team=team)
    if sharing.revoke(link, request.user, via="page"):
        messages.success(request, f"Link to {sharing.describe(link)} revoked: it answers “no longer works” from now.")
    return redirect("share_list")
