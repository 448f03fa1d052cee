"""Team switching, members and API tokens in the browser pages (the API covers the same in tests/api/test_api.py;
tests/teams/test_invitations.py covers invitations)."""

from __future__ import annotations

import hashlib
import re

from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEvent
from jobs.api.models import ApiToken
from jobs.models import Host, Membership, Team
from jobs.teams import membership as teams


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_member_of_two_teams_switches_between_them_and_sees_only_the_current_ones_objects(owner_client, owner, host):
    other = Team.objects.create(name="storage lab")
    Membership.objects.create(user=owner, team=other, role=Membership.Role.VIEWER)
    theirs = Host.objects.create(team=other, name="lab-vm", address="10.9.9.9", username="x")
    page = owner_client.get("/hosts/").content.decode()
    assert host.name in page and "lab-vm" not in page and 'id="team-switch"' in page
    owner_client.post("/team/switch", {"team": other.pk})
    page = owner_client.get("/hosts/").content.decode()
    assert "lab-vm" in page and host.name not in page
    assert owner_client.get(f"/hosts/{theirs.pk}/").status_code == 200
    assert owner_client.get(f"/hosts/{host.pk}/").status_code == 404  # the other team's host, now
    stranger_team = Team.objects.create(name="not mine")
    assert owner_client.post("/team/switch", {"team": stranger_team.pk}).status_code == 404


def test_owners_invite_members_by_username_or_email_change_roles_and_remove_them(owner_client, team, owner):
    User.objects.create_user("vera", email="vera@example.com", password="x-long-password-5")
    page = owner_client.post("/team/members/", {"user": "VERA@example.com", "role": "viewer"}, follow=True)
    assert "it has been invited" in page.content.decode()
    assert not Membership.objects.filter(team=team, user__username="vera").exists()  # not before she accepts
    vera_client = Client()
    vera_client.force_login(User.objects.get(username="vera"))
    (invitation,) = teams.pending_invitations(User.objects.get(username="vera"))
    vera_client.post(f"/invitations/{invitation.token}", {"answer": "accept"})
    vera = Membership.objects.get(team=team, user__username="vera")
    assert vera.role == "viewer"
    owner_client.post(f"/team/members/{vera.pk}", {"role": "member"})
    vera.refresh_from_db()
    assert vera.role == "member"
    # The last owner can be neither demoted nor removed.
    mine = Membership.objects.get(team=team, user=owner)
    page = owner_client.post(f"/team/members/{mine.pk}", {"role": "viewer"}, follow=True).content.decode()
    assert "last owner" in page
    mine.refresh_from_db()
    assert mine.role == "owner"
    owner_client.post(f"/team/members/{vera.pk}", {"action": "remove"})
    assert not Membership.objects.filter(pk=vera.pk).exists()
    actions = list(AuditEvent.objects.filter(team=team).order_by("pk").values_list("action", flat=True))
    assert actions == ["invitation.created", "invitation.accepted", "member.role_changed", "member.removed"]


def test_members_and_viewers_see_the_members_but_cannot_change_them(team, owner):
    viewer = User.objects.create_user("vic", password="x-long-password-6")
    Membership.objects.create(user=viewer, team=team, role=Membership.Role.VIEWER)
    client = _client(viewer)
    page = client.get("/team/members/").content.decode()
    assert owner.username in page and "Invite a member" not in page and "Pending invitations" not in page
    assert client.post("/team/members/", {"user": "vic", "role": "owner"}).status_code == 403
    mine = Membership.objects.get(user=viewer)
    assert client.post(f"/team/members/{mine.pk}", {"role": "owner"}).status_code == 403
    mine.refresh_from_db()
    assert mine.role == "viewer"


def test_a_token_is_shown_once_stored_hashed_works_and_can_be_revoked(owner_client, owner, team, disk):
    page = owner_client.post("/account/tokens/", {"name": "nightly CI", "days": "30"}).content.decode()
    secret = re.search(r'<pre class="token" id="new-token">(bw_[^<]+)</pre>', page)[1]
    token = ApiToken.objects.get(name="nightly CI")
    assert token.expires_at and token.user == owner and token.team == team
    assert secret not in str(ApiToken.objects.filter(pk=token.pk).values().get())
    assert token.hashed_secret == hashlib.sha256(secret.split("_", 2)[2].encode()).hexdigest()
    assert secret not in owner_client.get("/account/tokens/").content.decode()  # shown once only
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/api/v1/disks/").json()["results"][0]["id"] == disk.pk
    owner_client.post(f"/account/tokens/{token.pk}/revoke")
    assert api.get("/api/v1/disks/").status_code == 401
    assert list(AuditEvent.objects.filter(team=team).values_list("action", flat=True).order_by("pk")) == [
        "token.created", "token.revoked"
    ]  # fmt: skip


def test_someone_elses_token_cannot_be_revoked(owner_client, team):
    other = User.objects.create_user("olaf", password="x-long-password-7")
    Membership.objects.create(user=other, team=team, role=Membership.Role.OWNER)
    token, _ = ApiToken.issue(other, team, "theirs")
    assert owner_client.post(f"/account/tokens/{token.pk}/revoke").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
