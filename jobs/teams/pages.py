"""Signing in and up, your team and your access: switch team, the team's members (owners invite and change
them) and settings (the longest sweep, the verdicts' thresholds), invitations to answer, personal API tokens,
your preferences (time zone)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from audit import log as audit
from audit.models import AuditEvent
from jobs import access
from jobs.api.models import ApiToken
from jobs.models import Invitation, Membership, Preferences
from jobs.teams import membership as teams
from jobs.teams.forms import AddMemberForm, NewTokenForm, PreferencesForm, SignupForm, TeamSettingsForm


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        teams.tell_about_invitations(self.request)
        return response


class LogoutView(auth_views.LogoutView):
    pass


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.BENCHWEB_ALLOW_SIGNUP:
        raise Http404("Sign-up is turned off on this server; ask an owner to invite you.")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        teams.place_new_user(user)
        teams.claim_invitations(user)
        auth.login(request, user, backend="jobs.teams.backends.ModelBackendWithPreferences")  # axes: sign-ins only
        teams.tell_about_invitations(request)
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})


@login_required
@require_POST
def switch_team(request: HttpRequest) -> HttpResponse:
    membership = get_object_or_404(Membership, user=request.user, team_id=request.POST.get("team"))
    request.session[teams.SESSION_KEY] = membership.team_id
    messages.info(request, f"You are now working in {membership.team.name}.")
    return redirect("overview")


@login_required
def members(request: HttpRequest) -> HttpResponse:
    mine = access.membership(request)
    team, is_owner = mine.team, mine.role == Membership.Role.OWNER
    form = AddMemberForm(request.POST or None)
    if request.method == "POST":
        if not is_owner:
            raise PermissionDenied("Only the team's owners change its members.")
        if form.is_valid():
            try:
                invitation = teams.invite(
                    team, teams.signed_in_user(request), form.cleaned_data["user"], form.cleaned_data["role"]
                )
            except teams.MembershipRefused as exc:
                form.add_error("user", str(exc))
            else:
                messages.success(request, teams.invited_message(invitation))
                return redirect("members")
    context = {
        "team": team,
        "is_owner": is_owner,
        "form": form,
        "members": team.memberships.select_related("user").order_by("created_at", "pk"),
        "invitations": team.invitations.pending().select_related("invited_by") if is_owner else [],
        "roles": Membership.Role.choices,
    }
    return render(request, "jobs/teams/members.html", context)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    mine = access.membership(request)
    if mine.role != Membership.Role.OWNER:
        raise PermissionDenied("Only the team's owners change its members.")
    invitation = get_object_or_404(Invitation, pk=pk, team=mine.team)
    teams.revoke(invitation, teams.signed_in_user(request))
    messages.success(request, f"The invitation of {invitation.invited_as} is withdrawn; it can no longer be accepted.")
    return redirect("members")


@login_required
def invitations(request: HttpRequest) -> HttpResponse:
    """The invitations waiting for the signed-in person, to accept or decline."""
    return render(
        request,
        "jobs/teams/invitations.html",
        {"invitations": teams.pending_invitations(teams.signed_in_user(request))},
    )


@login_required
@require_POST
def invitation_answer(request: HttpRequest, token: str) -> HttpResponse:
    # Someone else's invitation is a 404, as if it did not exist.
    invitation = get_object_or_404(Invitation.objects.select_related("team"), token=token, user=request.user)
    answer = request.POST.get("answer")
    if answer not in ("accept", "decline"):
        messages.error(request, "Choose Accept or Decline.")
        return redirect("invitations")
    try:
        if answer == "accept":
            membership = teams.accept(invitation, teams.signed_in_user(request))
        else:
            teams.decline(invitation, teams.signed_in_user(request))
    except teams.MembershipRefused as exc:
        messages.error(request, str(exc))
        return redirect("invitations")
    if answer == "decline":
        messages.info(request, f"You declined the invitation to {invitation.team.name}.")
        return redirect("invitations")
    request.session[teams.SESSION_KEY] = membership.team_id
    messages.success(request, f"You joined {membership.team.name} as {membership.role} and now work in it.")
    return redirect("overview")


@login_required
@require_POST
def member_change(request: HttpRequest, pk: int) -> HttpResponse:
    mine = access.membership(request)
    if mine.role != Membership.Role.OWNER:
        raise PermissionDenied("Only the team's owners change its members.")
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=pk, team=mine.team)
    name = membership.user.get_username()
    remove = request.POST.get("action") == "remove"
    role = request.POST.get("role", "")
    if not remove and role not in Membership.Role.values:
        messages.error(request, f"Choose a role for {name}: owner, member or viewer.")
        return redirect("members")
    try:
        with transaction.atomic():
            if remove or role != Membership.Role.OWNER:
                teams.last_owner_guard(membership)
            if remove:
                membership.delete()
                audit.record(mine.team, request.user, AuditEvent.Action.MEMBER_REMOVED, None, member=name,
                             role=membership.role)  # fmt: skip
                messages.success(request, f"{name} is no longer in {mine.team.name}.")
            elif role != membership.role:
                before, membership.role = membership.role, role
                membership.save(update_fields=["role"])
                audit.record(mine.team, request.user, AuditEvent.Action.MEMBER_ROLE_CHANGED, membership,
                             member=name, role_from=before, role_to=role)  # fmt: skip
                messages.success(request, f"{name} is now {role}.")
    except teams.MembershipRefused as exc:
        messages.error(request, str(exc))
    return redirect("members")


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    mine = access.membership(request)
    form = NewTokenForm(request.POST or None)
    shown_once = None
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["days"]
        expires = timezone.now() + timedelta(days=days) if days else None
        token, shown_once = ApiToken.issue(request.user, mine.team, form.cleaned_data["name"], expires_at=expires)
        audit.record(mine.team, request.user, AuditEvent.Action.TOKEN_CREATED, token, name=token.name,
                     prefix=token.prefix, expires_at=expires and expires.isoformat(), via="page")  # fmt: skip
        form = NewTokenForm()
    context = {
        "team": mine.team,
        "form": form,
        "shown_once": shown_once,
        "tokens": ApiToken.objects.filter(user=teams.signed_in_user(request), team=mine.team),
        "now": timezone.now(),
    }
    response = render(request, "jobs/teams/tokens.html", context)
    response["Cache-Control"] = "no-store"  # the page that shows a new token must not be cached
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    mine = access.membership(request)
    token = get_object_or_404(ApiToken, pk=pk, user=request.user, team=mine.team)
    if token.revoked_at is None:
        token.revoke()
        audit.record(mine.team, request.user, AuditEvent.Action.TOKEN_REVOKED, token, prefix=token.prefix,
                     via="page")  # fmt: skip
        messages.success(request, f"Token {token} revoked: requests with it are refused from now on.")
    return redirect("tokens")


@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    mine, _ = Preferences.objects.get_or_create(user=teams.signed_in_user(request))
    browser = request.clock.browser  # type: ignore[attr-defined]  # set by jobs.middleware
    form = PreferencesForm(request.POST or None, instance=mine, browser_zone=browser)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        chosen = saved.time_zone or f"your browser's ({browser or 'UTC until it reports one'})"
        messages.success(request, f"Times are now shown in {chosen}.")
        return redirect("preferences")
    return render(request, "jobs/teams/preferences.html", {"form": form, "now": timezone.now()})


@login_required
def team_settings(request: HttpRequest) -> HttpResponse:
    """The team's settings: everyone reads them, owners change them."""
    mine = access.membership(request)
    team, is_owner = mine.team, mine.role == Membership.Role.OWNER
    form = TeamSettingsForm(request.POST or None, instance=team)
    if request.method == "POST":
        access.require_owner(request, team, "change the team's settings")
        if form.is_valid():
            team = form.save()
            messages.success(
                request,
                f"Sweeps of {team.name} may now take up to {form.bound_text}; it has {form.own_thresholds_text}.",
            )
            return redirect("team_settings")
    if not is_owner:
        for field in form.fields.values():
            field.disabled = True
    return render(request, "jobs/teams/settings.html", {"team": team, "form": form, "is_owner": is_owner})
