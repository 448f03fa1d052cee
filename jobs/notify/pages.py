"""The Alert channels page (the team's channels with their state, a form per kind to add one) and a channel's page
(its delivery log, Send test, edit, delete). Owners manage channels; members may send a test; viewers look."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from jobs import access
from jobs.models import AlertChannel
from jobs.notify import delivery
from jobs.notify.channels import ChannelRefused, rotate_secret, save_channel
from jobs.notify.forms import ChannelForm

Kind = AlertChannel.Kind
MANAGE = "manage alert channels"
LOG_SHOWN = 100


@login_required
def channel_list(request: HttpRequest) -> HttpResponse:
    team = access.team(request)
    kind = request.POST.get("kind", "")
    forms = {choice: ChannelForm(request.POST if kind == choice else None, kind=choice) for choice in Kind.values}
    if request.method == "POST":
        access.require_owner(request, team, MANAGE)
        saved = _saved(forms[kind], None, request) if kind in forms else None
        if saved and saved[1]:
            return _detail(request, saved[0], shown_once=saved[1])
        if saved:
            messages.success(request, f"Channel {saved[0].name} added. Send a test to see it arrive.")
            return redirect("channel_detail", pk=saved[0].pk)
    context = {
        "channels": AlertChannel.objects.filter(team=team),
        "forms": forms,
        "open_kind": kind,
        "is_owner": access.is_owner(request, team),
        "can_test": access.can_change(request, team),
    }
    return render(request, "jobs/notify/channel_list.html", context)


@login_required
def channel_detail(request: HttpRequest, pk: int) -> HttpResponse:
    channel = access.owned(request, AlertChannel, pk)
    form = None
    if request.method == "POST":
        access.require_owner(request, channel.team, MANAGE)
        form = ChannelForm(request.POST, kind=channel.kind, channel=channel)
        if _saved(form, channel, request):
            messages.success(request, f"Channel {channel.name} saved.")
            return redirect("channel_detail", pk=channel.pk)
    return _detail(request, channel, form=form)


@login_required
@require_POST
def channel_test(request: HttpRequest, pk: int) -> HttpResponse:
    channel = access.owned(request, AlertChannel, pk)
    access.require_change(request, channel.team)
    delivery.send_test(channel, request.user.get_username())
    messages.info(request, "Test alert queued: a worker sends it now; its delivery shows in the log below.")
    return redirect("channel_detail", pk=channel.pk)


@login_required
@require_POST
def channel_rotate_secret(request: HttpRequest, pk: int) -> HttpResponse:
    channel = access.owned(request, AlertChannel, pk)
    access.require_owner(request, channel.team, MANAGE)
    try:
        secret = rotate_secret(channel)
    except ChannelRefused as exc:
        messages.error(request, str(exc))
        return redirect("channel_detail", pk=channel.pk)
    return _detail(request, channel, shown_once=secret)


@login_required
@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    channel = access.owned(request, AlertChannel, pk)
    access.require_owner(request, channel.team, MANAGE)
    channel.delete()
    messages.success(request, f"Channel {channel.name} deleted, with its delivery log.")
    return redirect("channel_list")


def _saved(
    form: ChannelForm, channel: AlertChannel | None, request: HttpRequest
) -> tuple[AlertChannel, str | None] | None:
    """The channel saved with a new webhook's secret, or None with the refusal on the form."""
    if not form.is_valid():
        return None
    try:
        return save_channel(channel, form.entered(), team=access.team(request), user=request.user)
    except ChannelRefused as exc:
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return None


def _detail(
    request: HttpRequest, channel: AlertChannel, form: ChannelForm | None = None, shown_once: str | None = None
) -> HttpResponse:
    owner = access.is_owner(request, channel.team)
    context = {
        "channel": channel,
        "deliveries": channel.deliveries.all()[:LOG_SHOWN],
        "form": form or (ChannelForm(kind=channel.kind, channel=channel) if owner else None),
        "is_owner": owner,
        "can_test": access.can_change(request, channel.team),
        "shown_once": shown_once,
    }
    response = render(request, "jobs/notify/channel_detail.html", context)
    response["Cache-Control"] = "no-store"  # the page that shows a new signing secret must not be cached
    return response
