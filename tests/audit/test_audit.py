"""The audit log: what is recorded, that no secret reaches it, and who may read it."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit import log as audit
from audit.models import AuditEvent
from jobs.models import Credential, Disk, Host, Invitation, Membership, Profile, Run, Team
from jobs.runs import launching, observer, queueing, steps, watching
from jobs.teams import membership as teams
from tests.builders import quick_profile, target_dir, team_with_host


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
    run = queueing.create_run(device, writer, user=owner)
    (event,) = _events(team, AuditEvent.Action.DESTRUCTIVE_RUN)
    assert event.object_id == str(run.pk) and event.details["device"] == "/dev/vdz" and event.actor == owner
    reader = Profile.objects.create(team=team, name="randread", rw="randread", runtime_s=10, size_bytes=2**20)
    queueing.create_run(device, reader, user=owner)
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
    newbie = User.objects.create_user("newbie", email="newbie@example.com", password="x-long-password-4")
    owner_client.post("/api/v1/members/", {"user": "newbie", "role": "viewer"}, content_type="application/json")
    member = teams.accept(Invitation.objects.get(user=newbie), newbie)
    owner_client.patch(f"/api/v1/members/{member.pk}/", {"role": "member"}, content_type="application/json")
    owner_client.delete(f"/api/v1/members/{member.pk}/")
    actions = list(AuditEvent.objects.filter(team=team).order_by("pk").values_list("action", flat=True))
    assert actions == [AuditEvent.Action.TOKEN_CREATED, AuditEvent.Action.TOKEN_REVOKED,
                       AuditEvent.Action.INVITATION_CREATED, AuditEvent.Action.INVITATION_ACCEPTED,
                       AuditEvent.Action.MEMBER_ROLE_CHANGED, AuditEvent.Action.MEMBER_REMOVED]  # fmt: skip
    role_change = AuditEvent.objects.get(action=AuditEvent.Action.MEMBER_ROLE_CHANGED)
    assert role_change.details == {"member": "newbie", "role_from": "viewer", "role_to": "member"}
    assert created["token"] not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))


# ----------------------------------------------------------------------------------------- credentials via the API

CANARIES = ("canary-new-host-password-51c2", "canary-replaced-password-9e04", "canary-key-passphrase-77ab")


def _encrypted_key(tmp_path) -> str:
    """A real ed25519 key protected by a passphrase, made by ssh-keygen."""
    path = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", CANARIES[2], "-f", str(path)], check=True)
    return path.read_text()


def test_credentials_created_and_replaced_through_the_api_are_recorded_and_their_secrets_never_are(
    owner_client, owner, team, host, credential, tmp_path
):
    def api(method: str, url: str, body: dict) -> dict:
        response = getattr(owner_client, method)(url, json.dumps(body), content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return response.json()

    new = api(
        "post", "/api/v1/hosts/", {"name": "vm2", "address": "10.0.0.2", "username": "u", "password": CANARIES[0]}
    )
    (created,) = _events(team, AuditEvent.Action.CREDENTIAL_CREATED)
    assert created.actor == owner and created.object_repr == "vm2 login (Password)"
    assert created.details == {"kind": "password", "host": "vm2", "via": "api"}
    # The host's own credential: its secret is replaced in place, and that is recorded by name only.
    api("patch", f"/api/v1/hosts/{new['id']}/", {"password": CANARIES[1]})
    api("patch", f"/api/v1/hosts/{new['id']}/", {"private_key": _encrypted_key(tmp_path), "passphrase": CANARIES[2]})
    password_change, key_change = _events(team, AuditEvent.Action.CREDENTIAL_CHANGED)[::-1]
    assert password_change.details == {"kind_from": "password", "kind": "password", "replaced": ["secret"],
                                       "host": "vm2", "via": "api"}  # fmt: skip
    assert key_change.details == {"kind_from": "password", "kind": "private_key",
                                  "replaced": ["secret", "passphrase"], "host": "vm2", "via": "api"}  # fmt: skip
    # Switching a host to another stored credential is recorded as the page records it.
    api("patch", f"/api/v1/hosts/{new['id']}/", {"credential": credential.pk})
    (switched,) = _events(team, AuditEvent.Action.HOST_CREDENTIAL_CHANGED)
    assert switched.details == {"credential": str(credential), "via": "api"}
    everything = json.dumps([[e.object_repr, e.details] for e in AuditEvent.objects.all()])
    log_page = owner_client.get("/audit/").content.decode()
    for canary in CANARIES:
        assert canary not in everything and canary not in log_page


# ----------------------------------------------------------------------------------------- refused host keys


def test_a_run_refused_for_a_changed_host_key_is_recorded_once_per_run(
    db, sshd, other_sshd, broker, tmp_path, monkeypatch
):
    team, host = team_with_host(sshd, port=other_sshd.port)  # pinned to sshd's key, answered with another
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    starter = User.objects.create_user("starter", password="x-long-password-8")
    run = queueing.create_run(disk, quick_profile(team), user=starter)
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED)
    assert launching.launch(run.pk) == Run.State.ERROR
    (event,) = _events(team, AuditEvent.Action.HOST_KEY_REFUSED)
    assert event.actor == starter and event.object_id == str(host.pk) and event.object_repr == str(host)
    assert event.details == {"address": f"{host.address}:{host.port}", "during": f"run {run.pk}",
                             "pinned": sshd.host_key.fingerprint, "presented": other_sshd.host_key.fingerprint,
                             "presented_type": other_sshd.host_key.key_type}  # fmt: skip
    # A running run's host is looked at again every few seconds: the refusal is recorded once, not once a step.
    running = queueing.create_run(disk, quick_profile(team, name="other"))
    Run.objects.filter(pk=running.pk).update(state=Run.State.RUNNING, remote_dir="/tmp/not-reached")
    assert steps.watch(host)
    monkeypatch.setattr(watching, "RETRY_S", 0.0)  # each round steps the host again at once
    looking = observer.Observer(inline=True)  # a worker's observer, its steps run in this thread
    looking.adopt(host.pk, Host.objects.get(pk=host.pk).observer_token)
    for _ in range(3):
        Run.objects.filter(pk=running.pk).update(explanation="")
        looking.run_round()
        assert "the last look at the host failed" in Run.objects.get(pk=running.pk).explanation
        assert host.pk in looking.holds()  # held still, to be looked at again
    running.refresh_from_db()
    assert running.state == Run.State.RUNNING and "the run goes on there" in running.explanation
    assert [e.details["during"] for e in _events(team, AuditEvent.Action.HOST_KEY_REFUSED)] == [
        f"run {running.pk}", f"run {run.pk}"
    ]  # fmt: skip
    assert "Accepted" not in other_sshd.handle.log()


def test_a_connection_test_refused_for_a_changed_host_key_is_recorded(owner_client, owner, sshd, other_sshd):
    team, host = team_with_host(sshd, port=other_sshd.port)  # pinned to sshd's key, answered with another
    Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    owner_client.post("/team/switch", {"team": team.pk})
    page = owner_client.post(f"/hosts/{host.pk}/test/").content.decode()
    assert other_sshd.host_key.fingerprint in page
    (event,) = _events(team, AuditEvent.Action.HOST_KEY_REFUSED)
    assert event.actor == owner and event.details["during"] == "connection test"
    assert (event.details["pinned"], event.details["presented"]) == (
        sshd.host_key.fingerprint, other_sshd.host_key.fingerprint
    )  # fmt: skip
    api = owner_client.post(f"/api/v1/hosts/{host.pk}/test-connection/")
    assert api.status_code == 200 and api.json()["ok"] is False
    assert len(_events(team, AuditEvent.Action.HOST_KEY_REFUSED)) == 1  # the same key again within the hour
    assert "Accepted" not in other_sshd.handle.log()
