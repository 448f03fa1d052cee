"""Alert channels: e-mail through a real SMTP server, signed webhooks and Apprise to a real HTTP receiver, the
retries and the delivery log, dead channels, the API's refusals and roles, secrets kept out of every answer.

Deliveries are attempted here by calling the use case the worker's task calls (jobs.notify.delivery.attempt);
tests/notify/test_channels_live.py sends them through a real Celery worker."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import crypto
from jobs.models import AlertChannel, Delivery, Membership, Team
from jobs.notify import delivery, publish
from jobs.notify.channels import ChannelInput, save_channel
from tests.factories import TeamFactory
from tests.notify.channels import EVENT, SUMMARY, TITLE, client_for, deliver_all, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(owner, team) -> Client:
    return client_for(owner, team)


def member(team: Team, role: str) -> Client:
    user = User.objects.create_user(f"{role}-of-{team.pk}")
    Membership.objects.create(user=user, team=team, role=role)
    return client_for(user, team)


def channel(team: Team, owner: User, **given: Any) -> AlertChannel:
    made, _ = save_channel(None, ChannelInput(**given), team=team, user=owner)
    return made


@pytest.fixture
def quick_retries(settings) -> None:
    settings.DELIVERY_RETRY_SECONDS = [0.0, 0.0]
    settings.CHANNEL_DEAD_AFTER = 3


# --------------------------------------------------------------------------------------------- e-mail


def test_an_alert_email_arrives_through_a_real_smtp_server_with_its_subject_summary_and_links(
    smtp_settings, team, owner, settings
):
    settings.PUBLIC_URL = "https://bench.example.com"
    mail = channel(team, owner, kind="email", addresses=["oncall@example.com", "storage@example.com"])
    publish(team.pk, EVENT)
    sent = deliver_all(mail)
    [message] = smtp_settings.wait_for(1)
    # Django folds a non-ASCII subject onto a continuation line ("Subject: \n =?utf-8?q?…"): hence the strip.
    assert message["Subject"].strip() == f"[benchweb] OPEN regression: {TITLE}"
    assert message["From"] == "benchweb@bench.example.com"
    assert smtp_settings.recipients == [["oncall@example.com", "storage@example.com"]]
    body = message.get_content()
    assert SUMMARY in body
    assert "Alert: https://bench.example.com/alerts/7/" in body
    assert "Chart: https://bench.example.com/disks/3/?range=custom#disk-charts" in body
    assert "Run: https://bench.example.com/runs/41/" in body
    assert "Opened: 2026-11-25T19:00:00Z" in body
    assert (sent.state, sent.attempts, sent.response) == (Delivery.State.SENT, 1, "250 accepted for 2 recipients")


def test_an_smtp_server_that_refuses_the_recipient_fails_the_attempt_with_its_reply(
    smtp_settings, team, owner, quick_retries
):
    async def refuse(server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        return "550 5.1.1 no such mailbox here"

    smtp_settings.handle_RCPT = refuse  # type: ignore[attr-defined]
    mail = channel(team, owner, kind="email", addresses=["nobody@example.com"])
    publish(team.pk, EVENT)
    delivery.attempt(mail.deliveries.get().pk)
    failed = mail.deliveries.get()
    assert failed.state == Delivery.State.FAILED
    assert "550" in failed.error and "no such mailbox here" in failed.error
    assert smtp_settings.messages == []


# -------------------------------------------------------------------------------------------- webhooks


def test_a_webhook_created_as_in_the_issue_is_received_signed_and_the_test_verifies_the_signature(
    api, team, http_receiver
):
    created = post(
        api, "/api/v1/alert-channels/", {"kind": "webhook", "url": f"{http_receiver.url}/hook", "name": "ops"}
    )
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    assert len(secret) >= 40
    publish(team.pk, EVENT)
    hook = AlertChannel.objects.get(pk=created.json()["id"])
    sent = deliver_all(hook)
    [request] = http_receiver.requests
    expected = "sha256=" + hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["x-benchweb-signature"], expected)
    body = request.json()
    assert body["event"] == "opened" and body["alert"]["kind"] == "regression" and body["alert"]["id"] == 7
    assert body["delivery"] == sent.pk and request.headers["x-benchweb-delivery"] == str(sent.pk)
    assert request.headers["x-benchweb-event"] == "opened"
    assert request.headers["x-benchweb-timestamp"] == body["sent_at"] and body["sent_at"].endswith("Z")
    assert request.path == "/hook" and request.headers["content-type"] == "application/json"
    assert (sent.state, sent.response) == (Delivery.State.SENT, "HTTP 200")
    # Changed on the way, the body no longer matches its signature.
    forged = request.body.replace(b"regression", b"resolved!!")
    assert hmac.new(secret.encode(), forged, hashlib.sha256).hexdigest() not in request.headers["x-benchweb-signature"]


def test_a_receiver_failing_twice_then_answering_gets_three_attempts_and_the_log_says_sent(
    team, owner, http_receiver, settings
):
    settings.DELIVERY_RETRY_SECONDS = [0.0, 0.0, 0.0]
    hook = channel(team, owner, kind="webhook", url=http_receiver.url)
    http_receiver.fail(2)
    publish(team.pk, EVENT)
    first = hook.deliveries.get()
    delivery.attempt(first.pk)
    first.refresh_from_db()
    hook.refresh_from_db()
    assert (first.state, first.attempts, first.response) == (Delivery.State.FAILED, 1, "HTTP 500")
    assert "The webhook answered 500" in first.error and hook.failures_in_a_row == 1
    sent = deliver_all(hook)
    hook.refresh_from_db()
    assert (sent.state, sent.attempts, sent.response, sent.error) == (Delivery.State.SENT, 3, "HTTP 200", "")
    assert len(http_receiver.requests) == 3
    assert len({r.json()["delivery"] for r in http_receiver.requests}) == 1
    assert hook.failures_in_a_row == 0 and not hook.is_dead


def test_a_dead_receiver_gives_up_after_the_last_retry_and_the_channel_shows_dead(
    team, owner, http_receiver, quick_retries, owner_client, api
):
    hook = channel(team, owner, kind="webhook", url=http_receiver.url, name="pager bridge")
    http_receiver.answer_with(503)
    publish(team.pk, EVENT)
    gave_up = deliver_all(hook)
    hook.refresh_from_db()
    assert (gave_up.state, gave_up.attempts, gave_up.next_attempt_at) == (Delivery.State.GAVE_UP, 3, None)
    assert hook.is_dead and "503" in hook.last_error
    listed = owner_client.get("/channels/").content.decode()
    assert 'class="badge dead"' in listed and "The webhook answered 503" in listed
    page = owner_client.get(f"/channels/{hook.pk}/").content.decode()
    assert "dead" in page and "gave up" in page and "3 failed attempts in a row" in page
    read = api.get(f"/api/v1/alert-channels/{hook.pk}/").json()
    assert read["dead"] is True and "503" in read["last_error"]
    log = api.get(f"/api/v1/alert-channels/{hook.pk}/deliveries/").json()
    assert [(d["state"], d["attempts"]) for d in log["results"]] == [("gave_up", 3)]


def test_a_receiver_that_never_answers_fails_the_attempt_at_the_timeout(team, owner, settings, loopback_allowed):
    import socket

    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        hook = channel(team, owner, kind="webhook", url=f"http://127.0.0.1:{silent.getsockname()[1]}/")
        publish(team.pk, EVENT)
        delivery.attempt(hook.deliveries.get().pk)
    failed = hook.deliveries.get()
    assert failed.state == Delivery.State.FAILED and "timed out" in failed.error.lower()


# --------------------------------------------------------------------------------------------- Apprise


def test_an_apprise_channel_reaches_the_receiver_through_apprises_json_scheme(api, team, http_receiver):
    port = http_receiver.url.rsplit(":", 1)[1]
    created = post(
        api, "/api/v1/alert-channels/", {"kind": "apprise", "url": f"json://bench:s3cr3t-pw@127.0.0.1:{port}/apprise"}
    )
    assert created.status_code == 201, created.content
    assert "s3cr3t-pw" not in created.content.decode() and created.json()["target"].startswith("json://bench:")
    publish(team.pk, EVENT)
    sent = deliver_all(AlertChannel.objects.get(pk=created.json()["id"]))
    [request] = http_receiver.requests
    assert request.path == "/apprise"
    assert request.json()["title"] == f"[benchweb] OPEN regression: {TITLE}"
    assert "fell from 4,000 to 2,760" in request.json()["message"]
    assert sent.state == Delivery.State.SENT


def test_an_apprise_service_that_fails_leaves_apprises_words_in_the_log(team, owner, http_receiver, quick_retries):
    port = http_receiver.url.rsplit(":", 1)[1]
    chat = channel(team, owner, kind="apprise", url=f"json://127.0.0.1:{port}/")
    http_receiver.answer_with(500)
    publish(team.pk, EVENT)
    gave_up = deliver_all(chat)
    assert gave_up.state == Delivery.State.GAVE_UP and "500" in gave_up.error


# ------------------------------------------------------------------------------------------ API input


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"kind": "webhook", "url": "ftp://files.example.com/hook", "name": "x"}, "url", "https://"),
        ({"kind": "webhook", "url": "file:///etc/passwd"}, "url", "not file:"),
        ({"kind": "webhook", "name": "x"}, "url", "Give the webhook URL"),
        ({"kind": "webhook", "url": "https://[::1/hook"}, "url", "This is not a URL"),
        ({"kind": "webhook", "url": "https://h.example.com", "events": ["nope"]}, "events", "choose from opened"),
        ({"kind": "apprise", "url": "pigeonpost://coop/12"}, "url", "does not know the scheme pigeonpost://"),
        ({"kind": "email", "addresses": ["oncall@example.com", "not-an-address"]}, "addresses", "'not-an-address'"),
        ({"kind": "email", "addresses": []}, "addresses", "at least one"),
        ({"kind": "email", "url": "https://example.com"}, "url", "give addresses, not url"),
        ({"kind": "carrier-pigeon", "url": "https://example.com"}, "kind", "choose email, webhook or apprise"),
        ({"url": "https://example.com"}, "kind", "kind"),
    ],
)
def test_bad_channel_input_is_a_400_naming_the_field_and_nothing_is_stored(api, body, field, words):
    refused = post(api, "/api/v1/alert-channels/", body)
    assert refused.status_code == 400, refused.content
    assert list(refused.json()) == [field]
    assert words in json.dumps(refused.json()[field])
    assert AlertChannel.objects.count() == 0


def test_a_taken_name_is_refused_and_a_missing_name_is_made_from_the_target(api, team, owner):
    channel(team, owner, kind="webhook", url="https://hooks.example.com/a", name="ops")
    taken = post(
        api, "/api/v1/alert-channels/", {"kind": "webhook", "url": "https://hooks.example.com/b", "name": "ops"}
    )
    assert taken.status_code == 400 and "already has a channel named 'ops'" in taken.json()["name"][0]
    made = post(api, "/api/v1/alert-channels/", {"kind": "email", "addresses": ["oncall@example.com"]})
    assert made.status_code == 201 and made.json()["name"] == "E-mail to oncall@example.com"


def test_a_channel_keeps_its_kind_and_a_patch_changes_only_what_it_names(api, team, owner):
    hook = channel(team, owner, kind="webhook", url="https://hooks.example.com/a", name="ops")
    secret = hook.secret_token
    moved = post(api, f"/api/v1/alert-channels/{hook.pk}/", {"kind": "email"}, method="patch")
    assert moved.status_code == 400 and "stays one" in moved.json()["kind"][0]
    changed = post(
        api, f"/api/v1/alert-channels/{hook.pk}/", {"kinds": ["run_failed"], "enabled": False}, method="patch"
    )
    assert changed.status_code == 200, changed.content
    hook.refresh_from_db()
    assert (hook.kinds, hook.enabled, hook.target, hook.name) == (
        ["run_failed"],
        False,
        "https://hooks.example.com/a",
        "ops",
    )
    assert hook.secret_token == secret and changed.json()["secret"] == "••••"


# ------------------------------------------------------------------------------------------- secrets


def test_the_webhook_secret_is_shown_once_and_stored_encrypted(api, team):
    created = post(
        api, "/api/v1/alert-channels/", {"kind": "webhook", "url": "https://hooks.example.com/x", "name": "ops"}
    )
    secret = created.json()["secret"]
    hook = AlertChannel.objects.get()
    assert secret not in hook.secret_token and crypto.decrypt(hook.secret_token) == secret
    for answer in (api.get(f"/api/v1/alert-channels/{hook.pk}/"), api.get("/api/v1/alert-channels/")):
        assert secret not in answer.content.decode()
    assert api.get(f"/api/v1/alert-channels/{hook.pk}/").json()["secret"] == "••••"


def test_an_apprise_urls_tokens_are_stored_encrypted_and_shown_masked(api, owner_client, team):
    url = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#storage"
    created = post(api, "/api/v1/alert-channels/", {"kind": "apprise", "url": url, "name": "slack"})
    assert created.status_code == 201, created.content
    chat = AlertChannel.objects.get()
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in chat.target and "TIiajkdnlazkcOXrIdevi7FQ" not in chat.url_token
    assert chat.reveal_url() == url
    for answer in (created, api.get("/api/v1/alert-channels/"), owner_client.get(f"/channels/{chat.pk}/")):
        assert "TIiajkdnlazkcOXrIdevi7FQ" not in answer.content.decode()


# ------------------------------------------------------------------------------------- roles and teams


def test_viewers_read_members_send_tests_and_only_owners_manage_channels(team, owner):
    hook = channel(team, owner, kind="webhook", url="https://hooks.example.com/x", name="ops")
    viewer, the_member = member(team, Membership.Role.VIEWER), member(team, Membership.Role.MEMBER)
    body = {"kind": "webhook", "url": "https://hooks.example.com/y", "name": "other"}
    assert viewer.get("/api/v1/alert-channels/").json()["count"] == 1
    assert post(viewer, "/api/v1/alert-channels/", body).status_code == 403
    assert post(viewer, f"/api/v1/alert-channels/{hook.pk}/test/").status_code == 403
    assert post(the_member, "/api/v1/alert-channels/", body).status_code == 403
    assert post(the_member, f"/api/v1/alert-channels/{hook.pk}/", {"enabled": False}, method="patch").status_code == 403
    assert the_member.delete(f"/api/v1/alert-channels/{hook.pk}/").status_code == 403
    tested = post(the_member, f"/api/v1/alert-channels/{hook.pk}/test/")
    assert tested.status_code == 202 and tested.json()["state"] == "queued"
    assert tested.json()["summary"] == "OPEN test: test of channel ops"


def test_another_teams_channel_is_a_404_and_their_events_never_reach_ours(api, team, owner, http_receiver):
    other = TeamFactory(name="theirs")
    theirs = channel(other, owner, kind="webhook", url=http_receiver.url, name="theirs")
    ours = channel(team, owner, kind="webhook", url=http_receiver.url, name="ours")
    assert api.get(f"/api/v1/alert-channels/{theirs.pk}/").status_code == 404
    assert post(api, f"/api/v1/alert-channels/{theirs.pk}/test/").status_code == 404
    publish(other.pk, EVENT)
    assert ours.deliveries.count() == 0 and theirs.deliveries.count() == 1


def test_a_channel_gets_only_the_events_and_kinds_it_asked_for_and_none_while_turned_off(team, owner):
    resolved_only = channel(team, owner, kind="email", addresses=["a@example.com"], events=["resolved"])
    failures_only = channel(team, owner, kind="email", addresses=["b@example.com"], kinds=["run_failed"])
    everything = channel(team, owner, kind="email", addresses=["c@example.com"])
    off = channel(team, owner, kind="email", addresses=["d@example.com"], enabled=False)
    publish(team.pk, EVENT)
    publish(team.pk, {**EVENT, "event": "resolved"})
    publish(team.pk, {"event": "opened", "alert": {**EVENT["alert"], "kind": "run_failed", "id": 8}})
    assert list(resolved_only.deliveries.values_list("event__event", flat=True)) == ["resolved"]
    assert list(failures_only.deliveries.values_list("event__alert__kind", flat=True)) == ["run_failed"]
    assert everything.deliveries.count() == 3 and off.deliveries.count() == 0


def test_publish_never_raises_on_an_event_it_cannot_read(team, owner):
    channel(team, owner, kind="email", addresses=["a@example.com"])
    publish(team.pk, {"event": object()})  # type: ignore[dict-item]
    publish(10**12, EVENT)
    assert Delivery.objects.count() == 0


def test_a_test_alert_goes_to_one_channel_even_when_it_is_turned_off(team, owner, http_receiver):
    off = channel(team, owner, kind="webhook", url=http_receiver.url, enabled=False, name="quiet")
    other = channel(team, owner, kind="webhook", url=http_receiver.url, name="loud")
    sent = delivery.send_test(off, "olga")
    delivery.attempt(sent.pk)
    [request] = http_receiver.requests
    assert request.json()["alert"]["kind"] == "test" and request.json()["alert"]["url"].endswith(f"/channels/{off.pk}/")
    assert other.deliveries.count() == 0


def test_the_docs_receiver_code_accepts_a_real_delivery_and_refuses_a_changed_one(team, owner, http_receiver):
    readme = (Path(__file__).resolve().parent.parent.parent / "docs" / "user-guide" / "channels.md").read_text()
    code = readme[readme.index("import hashlib, hmac, json\nfrom datetime") :]
    receiver: dict[str, Any] = {}
    exec(code[: code.index("```")], receiver)  # noqa: S102 (the docs' own example, run as a receiver would)
    hook, secret = save_channel(None, ChannelInput(kind="webhook", url=http_receiver.url), team=team, user=owner)
    publish(team.pk, EVENT)
    deliver_all(hook)
    [request] = http_receiver.requests
    headers = {"X-Benchweb-Signature": request.headers["x-benchweb-signature"]}
    assert receiver["verified_alert"](request.body, headers, secret)["alert"]["id"] == 7
    with pytest.raises(ValueError, match="not signed"):
        receiver["verified_alert"](request.body.replace(b'"id":7', b'"id":8'), headers, secret)


def test_a_delivery_whose_channel_was_turned_off_gives_up_without_marking_the_channel_failed(
    team, owner, http_receiver
):
    hook = channel(team, owner, kind="webhook", url=http_receiver.url)
    publish(team.pk, EVENT)
    AlertChannel.objects.filter(pk=hook.pk).update(enabled=False)
    delivery.attempt(hook.deliveries.get().pk)
    hook.refresh_from_db()
    stopped = hook.deliveries.get()
    assert stopped.state == Delivery.State.GAVE_UP
    assert stopped.error == "The channel was turned off before this delivery was sent."
    assert http_receiver.requests == [] and hook.failures_in_a_row == 0 and hook.last_error == ""


def test_the_pages_let_owners_add_members_test_and_viewers_only_look(team, owner, owner_client):
    added = owner_client.post("/channels/", {"kind": "email", "email-addresses": "a@example.com\nb@example.com",
                                             "email-name": "", "email-enabled": "on"})  # fmt: skip
    mail = AlertChannel.objects.get()
    assert added.status_code == 302 and added["Location"] == f"/channels/{mail.pk}/"
    assert (mail.name, mail.enabled) == ("E-mail to a@example.com", True)
    assert mail.addresses == ["a@example.com", "b@example.com"]
    refused = owner_client.post("/channels/", {"kind": "apprise", "apprise-url": "pigeonpost://coop"})
    assert refused.status_code == 200 and "does not know the scheme pigeonpost://" in refused.content.decode()
    for role in (Membership.Role.MEMBER, Membership.Role.VIEWER):
        user = User.objects.create_user(f"page-{role}")
        Membership.objects.create(user=user, team=team, role=role)
        browser = Client()
        browser.force_login(user)
        assert browser.get("/channels/").status_code == 200
        assert browser.post("/channels/", {"kind": "email", "email-addresses": "c@example.com"}).status_code == 403
        assert browser.post(f"/channels/{mail.pk}/delete").status_code == 403
        tested = browser.post(f"/channels/{mail.pk}/test")
        assert tested.status_code == (302 if role == Membership.Role.MEMBER else 403)
    assert AlertChannel.objects.count() == 1 and mail.deliveries.count() == 1
    assert owner_client.post(f"/channels/{mail.pk}/delete").status_code == 302
    assert AlertChannel.objects.count() == 0 and Delivery.objects.count() == 0


def test_a_new_webhook_secret_is_shown_once_and_signs_the_next_delivery(api, team, owner, http_receiver, owner_client):
    hook, first = save_channel(None, ChannelInput(kind="webhook", url=http_receiver.url), team=team, user=owner)
    rotated = post(api, f"/api/v1/alert-channels/{hook.pk}/rotate-secret/")
    assert rotated.status_code == 200, rotated.content
    second = rotated.json()["secret"]
    assert second not in (first, "••••") and api.get(f"/api/v1/alert-channels/{hook.pk}/").json()["secret"] == "••••"
    publish(team.pk, EVENT)
    deliver_all(hook)
    [request] = http_receiver.requests
    signed = "sha256=" + hmac.new(second.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.headers["x-benchweb-signature"] == signed
    page = owner_client.post(f"/channels/{hook.pk}/rotate-secret")
    assert hook.__class__.objects.get(pk=hook.pk).reveal_secret() in page.content.decode()
    mail = channel(team, owner, kind="email", addresses=["a@example.com"])
    refused = post(api, f"/api/v1/alert-channels/{mail.pk}/rotate-secret/")
    assert refused.status_code == 400 and "Only a webhook channel" in refused.json()["kind"][0]
    member_token = member(team, Membership.Role.MEMBER)
    assert post(member_token, f"/api/v1/alert-channels/{hook.pk}/rotate-secret/").status_code == 403
