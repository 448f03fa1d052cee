"""Team invitations: an owner invites, nobody joins without accepting, and the answers never tell the owner which
usernames or email addresses have an account."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from jobs.models import Invitation, Membership
from jobs.teams import membership as teams

PASSWORD = "x-long-password-for-vera-1"


@pytest.fixture
def vera(db) -> User:
    user = User.objects.create_user("vera", email="vera@example.com", password=PASSWORD)
    teams.place_new_user(user)
    return user


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _invite(owner_client: Client, value: str, role: str = "viewer") -> str:
    return owner_client.post("/team/members/", {"user": value, "role": role}, follow=True).content.decode()


def _without(page: str, typed: str) -> str:
    """The page with what the owner typed, the CSRF tokens, the invitations' ids and their expiry times taken out
    (two invitations made a second apart on a busy machine expire a second apart)."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    page = re.sub(r'<time datetime="[^"]+">[^<]*</time>', "<time>WHEN</time>", page)
    page = re.sub(r"/team/invitations/\d+/", "/team/invitations/ID/", page)
    return page.replace(typed, "TYPED")


def test_inviting_an_existing_and_a_missing_account_answers_exactly_the_same(owner_client, team, vera):
    existing = _invite(owner_client, "vera")
    assert "If an account with the username or email 'vera' exists, it has been invited" in html.unescape(existing)
    teams.revoke(Invitation.objects.get(invited_as="vera"), None)
    missing = _invite(owner_client, "vena")  # no such account
    assert _without(existing, "vera") == _without(missing, "vena")
    # The pending list shows what was typed, for both alike; nobody joined.
    assert not Membership.objects.filter(team=team, user=vera).exists()
    assert [e.details for e in AuditEvent.objects.filter(action=AuditEvent.Action.INVITATION_CREATED)] == [
        {"invited": "vena", "role": "viewer"}, {"invited": "vera", "role": "viewer"}
    ]  # fmt: skip


def test_the_invited_person_sees_the_invitation_on_sign_in_accepts_and_joins_with_the_invited_role(
    owner_client, owner, team, vera
):
    _invite(owner_client, "VERA@example.com", role="owner")
    client = Client()
    page = client.post("/login/", {"username": "vera", "password": PASSWORD}, follow=True).content.decode()
    assert f"You are invited to join {team.name}" in page
    assert 'Invitations <span class="count">1</span>' in page
    page = client.get("/invitations/").content.decode()
    assert team.name in page and "Owner" in page and owner.username in page
    (invitation,) = Invitation.objects.all()
    page = client.post(f"/invitations/{invitation.token}", {"answer": "accept"}, follow=True).content.decode()
    assert f"You joined {team.name} as owner" in page
    assert Membership.objects.get(team=team, user=vera).role == "owner"
    assert 'class="count"' not in page  # nothing left to answer
    # Answered once: a second accept is refused, and the membership is not touched.
    again = client.post(f"/invitations/{invitation.token}", {"answer": "accept"}, follow=True).content.decode()
    assert "answered this invitation already" in again
    accepted = AuditEvent.objects.get(action=AuditEvent.Action.INVITATION_ACCEPTED)
    assert accepted.team == team and accepted.actor == vera
    assert accepted.details == {"invited": "VERA@example.com", "member": "vera", "role": "owner"}


def test_declining_creates_no_membership_and_is_recorded(owner_client, team, vera):
    _invite(owner_client, "vera")
    (invitation,) = Invitation.objects.all()
    page = _client(vera).post(f"/invitations/{invitation.token}", {"answer": "decline"}, follow=True)
    assert "You declined" in page.content.decode()
    assert not Membership.objects.filter(team=team, user=vera).exists()
    assert AuditEvent.objects.filter(team=team, action=AuditEvent.Action.INVITATION_DECLINED, actor=vera).exists()
    assert "vera" not in owner_client.get("/team/members/").content.decode()  # no longer pending


def test_an_expired_or_withdrawn_invitation_is_refused(owner_client, team, vera):
    _invite(owner_client, "vera")
    (invitation,) = Invitation.objects.all()
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    client = _client(vera)
    assert team.name not in client.get("/invitations/").content.decode()
    page = client.post(f"/invitations/{invitation.token}", {"answer": "accept"}, follow=True).content.decode()
    assert "expired" in page and "invite you again" in page
    _invite(owner_client, "vera")
    fresh = Invitation.objects.get(accepted_at=None, expires_at__gt=timezone.now())
    owner_client.post(f"/team/invitations/{fresh.pk}/revoke")
    page = client.post(f"/invitations/{fresh.token}", {"answer": "accept"}, follow=True).content.decode()
    assert "withdrawn" in page
    assert not Membership.objects.filter(team=team, user=vera).exists()
    actions = set(AuditEvent.objects.filter(team=team).values_list("action", flat=True))
    assert AuditEvent.Action.INVITATION_REVOKED in actions and AuditEvent.Action.INVITATION_ACCEPTED not in actions


def test_only_the_invited_person_can_answer_an_invitation(owner_client, owner, team, vera):
    _invite(owner_client, "vera")
    (invitation,) = Invitation.objects.all()
    mallory = User.objects.create_user("mallory", password="x-long-password-2")
    for client in (_client(mallory), owner_client):
        assert client.post(f"/invitations/{invitation.token}", {"answer": "accept"}).status_code == 404
        assert team.name not in client.get("/invitations/").content.decode().split("<main>")[1]
    assert not Membership.objects.filter(team=team, user=mallory).exists()
    # Only owners invite or withdraw invitations.
    viewer = _client(vera)
    Membership.objects.create(user=vera, team=team, role=Membership.Role.VIEWER)
    viewer.post("/team/switch", {"team": team.pk})
    assert viewer.post("/team/members/", {"user": "mallory", "role": "owner"}).status_code == 403
    assert viewer.post(f"/team/invitations/{invitation.pk}/revoke").status_code == 403


def test_signing_up_with_an_invited_email_shows_the_invitation(owner_client, team, settings):
    settings.BENCHWEB_ALLOW_SIGNUP = True
    _invite(owner_client, "newbie@example.com", role="member")
    _invite(owner_client, "typo-name", role="owner")  # a username nobody had when it was typed
    client = Client()
    form = {"username": "newbie", "email": "Newbie@Example.com", "password1": PASSWORD, "password2": PASSWORD}
    page = client.post("/signup/", form, follow=True).content.decode()
    assert f"You are invited to join {team.name}" in page
    (invitation,) = Invitation.objects.filter(user__username="newbie")
    client.post(f"/invitations/{invitation.token}", {"answer": "accept"})
    assert Membership.objects.get(team=team, user__username="newbie").role == "member"
    # Registering the username an owner once typed does not claim that invitation.
    squatter = Client()
    form = {"username": "typo-name", "password1": PASSWORD, "password2": PASSWORD}
    assert "You are invited" not in squatter.post("/signup/", form, follow=True).content.decode()
    assert not Invitation.objects.filter(user__username="typo-name").exists()


def test_the_api_invites_rather_than_adds_and_answers_the_same_for_any_name(owner_client, team, vera):
    def invite(value: str) -> dict:
        response = owner_client.post("/api/v1/members/", {"user": value, "role": "member"},
                                     content_type="application/json")  # fmt: skip
        assert response.status_code == 202, response.content
        return response.json()

    existing, missing = invite("vera"), invite("vena")
    assert {k: v for k, v in existing.items() if k not in ("detail", "invited", "expires_at")} == {"role": "member"}
    assert existing["detail"].replace("vera", "TYPED") == missing["detail"].replace("vena", "TYPED")
    assert not Membership.objects.filter(team=team, user=vera).exists()
    assert teams.pending_invitations(vera).get().team == team


def _log_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state("load")


def _fits(page) -> bool:
    return page.evaluate("document.scrollingElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_inviting_and_accepting_in_a_browser_fits_a_phone_and_a_desktop(page, phone_page, live_server, screenshot):
    owner = User.objects.create_user("olga", password=PASSWORD)
    team = teams.place_new_user(owner).team
    vera = User.objects.create_user("vera", email="vera@example.com", password=PASSWORD)
    teams.place_new_user(vera)
    for screen, invitee in ((phone_page, "vera@example.com"), (page, "someone.with.a.long.address@example.org")):
        _log_in(screen, live_server, "olga", PASSWORD)
        screen.goto(f"{live_server.url}/team/members/")
        screen.get_by_label("Username or email").fill(invitee)
        screen.locator("#id_role").select_option("member")
        screen.get_by_role("button", name="Invite").click()
        screen.wait_for_load_state("load")
        assert "it has been invited" in screen.locator(".messages").inner_text()
        assert _fits(screen) and not screen.js_errors
        screenshot("members-" + ("phone" if screen is phone_page else "desktop"), on=screen)
        screen.context.clear_cookies()
    for screen in (phone_page, page):
        _log_in(screen, live_server, "vera", PASSWORD)
        assert "You are invited to join" in screen.locator(".messages").inner_text()
        if screen is phone_page:
            assert screen.get_by_role("button", name="Menu 1").is_visible()  # the count shows on the folded menu
            screen.get_by_role("button", name="Menu").click()
            screenshot("menu-phone", on=screen)
        screen.get_by_role("link", name="Invitations 1").click()
        screen.wait_for_load_state("load")
        assert _fits(screen) and not screen.js_errors
        screenshot("invitations-" + ("phone" if screen is phone_page else "desktop"), on=screen)
        if screen is page:
            screen.get_by_role("button", name="Accept").click()
            screen.wait_for_load_state("load")
            assert f"You joined {team.name} as member" in screen.locator(".messages").inner_text()
        screen.context.clear_cookies()
    assert Membership.objects.get(team=team, user=vera).role == "member"
