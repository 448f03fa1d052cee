"""The audit log: what is recorded, that no secret reaches it, and who may read it."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit import log as audit
from audit.models import AuditEvent
from jobs import services
from jobs.models import Credential, Disk, Membership, Profile, Team


def _events(team, action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(team=team, action=action))


def test_approving_a_host_key_is_recorded_with_who_and_which_fingerprint(owner_client, owner, host, sshd):
    host.port = sshd.port
    host.save()
    owner_client.post(f"/hosts/{host.pk}/scan-key")
    owner_client.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": sshd.host_key.fingerprint})
    (event,) = _events(host.team, AuditEvent.Action.HOST_KEY_APPROVED)
    assert event.actor == owner and event.actor_name == owner.username
    assert event.details["fingerprint"] == sshd.host_key.fingerprint and event.object_repr == str(host)


def test_a_scan_that_finds_another_key_than_the_pinned_one_is_recorded(owner_client, host, sshd, other_sshd):
    key = other_sshd.host_key
    host.port, host.host_key_type, host.host_key_b64, host.host_key_fingerprint = (
        sshd.port, key.key_type, key.key_b64, key.fingerprint
    )  # fmt: skip
    host.save()
    owner_client.post(f"/hosts/{host.pk}/scan-key")
    (event,) = _events(host.team, AuditEvent.Action.HOST_KEY_CHANGED)
    assert event.details == {"pinned": key.fingerprint, "presented": sshd.host_key.fingerprint,
                             "presented_type": sshd.host_key.key_type}  # fmt: skip


def test_credential_changes_are_recorded_and_the_secret_never_is(owner_client, team, host):
    canary = "canary-password-7f3a9c"
    data = {"name": host.name, "address": host.address, "port": "22", "username": "bench", "os": "linux", "site": "",
            "enabled": "on", "run_base_dir": "", "ndisk64_path": "", "credential_mode": "new",
            "new_credential_kind": "password", "new_credential_name": "second login", "private_key": "",
            "password": canary, "passphrase": ""}  # fmt: skip
    response = owner_client.post(f"/hosts/{host.pk}/edit/", data)
    assert response.status_code == 302
    created = _events(team, AuditEvent.Action.CREDENTIAL_CREATED)
    switched = _events(team, AuditEvent.Action.HOST_CREDENTIAL_CHANGED)
    assert [e.object_repr for e in created] == [str(Credential.objects.get(name="second login"))]
    assert switched and switched[0].details["credential"] == "second login (Password)"
    everything = json.dumps([[e.object_repr, e.details] for e in AuditEvent.objects.all()])
    assert canary not in everything
    assert canary not in owner_client.get("/audit/").content.decode()


def test_a_destructive_run_is_recorded(team, host, owner):
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/vdz", kind=Disk.Kind.BLOCK,
                                 allow_destructive=True, disk_type="custom")  # fmt: skip
    writer = Profile.objects.create(team=team, name="randwrite", rw="randwrite", runtime_s=10, size_bytes=2**20)
    run = services.create_run(device, writer, user=owner)
    (event,) = _events(team, AuditEvent.Action.DESTRUCTIVE_RUN)
    assert event.object_id == str(run.pk) and event.details["device"] == "/dev/vdz" and event.actor == owner
    reader = Profile.objects.create(team=team, name="randread", rw="randread", runtime_s=10, size_bytes=2**20)
    services.create_run(device, reader, user=owner)
    assert len(_events(team, AuditEvent.Action.DESTRUCTIVE_RUN)) == 1  # reading is not destructive


def test_secrets_are_refused_by_the_recorder(team):
    with pytest.raises(ValueError, match="must not carry secrets"):
        audit.record(team, None, AuditEvent.Action.CREDENTIAL_CHANGED, None, password="x")


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_only_owners_read_the_log_and_only_their_teams(owner_client, team, role):
    audit.record(team, None, AuditEvent.Action.MEMBER_ADDED, None, member="ours")
    other = Team.objects.create(name="others")
    audit.record(other, None, AuditEvent.Action.MEMBER_ADDED, None, member="theirs")
    page = owner_client.get("/audit/").content.decode()
    assert "ours" in page and "theirs" not in page
    user = User.objects.create_user(f"a-{role}", password="x-long-password-9")
    Membership.objects.create(user=user, team=team, role=role)
    client = Client()
    client.force_login(user)
    assert client.get("/audit/").status_code == 403
    assert 'href="/audit/"' not in client.get("/overview/").content.decode()
    assert 'href="/audit/"' in owner_client.get("/overview/").content.decode()  # in the owner's menu


def test_tokens_and_membership_changes_made_through_the_api_are_recorded(owner_client, owner, team):
    created = owner_client.post("/api/v1/tokens/", {"name": "ci"}, content_type="application/json").json()
    owner_client.delete(f"/api/v1/tokens/{created['id']}/")
    User.objects.create_user("newbie", email="newbie@example.com", password="x-long-password-4")
    member = owner_client.post("/api/v1/members/", {"user": "newbie", "role": "viewer"},
                               content_type="application/json").json()  # fmt: skip
    owner_client.patch(f"/api/v1/members/{member['id']}/", {"role": "member"}, content_type="application/json")
    owner_client.delete(f"/api/v1/members/{member['id']}/")
    actions = list(AuditEvent.objects.filter(team=team).order_by("pk").values_list("action", flat=True))
    assert actions == [AuditEvent.Action.TOKEN_CREATED, AuditEvent.Action.TOKEN_REVOKED, AuditEvent.Action.MEMBER_ADDED,
                       AuditEvent.Action.MEMBER_ROLE_CHANGED, AuditEvent.Action.MEMBER_REMOVED]  # fmt: skip
    role_change = AuditEvent.objects.get(action=AuditEvent.Action.MEMBER_ROLE_CHANGED)
    assert role_change.details == {"member": "newbie", "role_from": "viewer", "role_to": "member"}
    assert created["token"] not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))
