"""Alert delivery end to end through the real parts: publish() after a commit, a real Redis, a real Celery worker
(and beat) against the test database, a real SMTP server and a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from jobs.models import AlertChannel, Delivery
from jobs.notify import publish
from jobs.notify.channels import ChannelInput, save_channel
from tests.notify.channels import EVENT, TITLE

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def wait_for_state(delivery: Delivery, state: str, timeout: float = 30) -> Delivery:
    deadline = time.monotonic() + timeout
    while True:
        delivery.refresh_from_db()
        if delivery.state == state:
            return delivery
        assert time.monotonic() < deadline, (
            f"delivery {delivery.pk} is {delivery.state} after {delivery.attempts} attempts, not {state}: "
            f"{delivery.response} {delivery.error}"
        )
        time.sleep(0.1)


def test_publish_after_a_commit_reaches_email_and_a_failing_webhook_through_a_real_worker(
    team, owner, smtp_server, http_receiver, worker_factory, monkeypatch
):
    monkeypatch.setenv("EMAIL_HOST", smtp_server.host)
    monkeypatch.setenv("EMAIL_PORT", str(smtp_server.port))
    monkeypatch.setenv("BENCHWEB_DELIVERY_RETRY_SECONDS", "0.5,0.5")
    worker_factory()
    mail, _ = save_channel(None, ChannelInput(kind="email", addresses=["oncall@example.com"]), team=team, user=owner)
    hook, secret = save_channel(
        None, ChannelInput(kind="webhook", url=f"{http_receiver.url}/in"), team=team, user=owner
    )
    assert secret is not None
    http_receiver.fail(1)
    started = time.monotonic()
    with transaction.atomic():  # as the alerts call it: once their transaction has committed
        transaction.on_commit(lambda: publish(team.pk, EVENT))
    assert time.monotonic() - started < 1, "publish waited for a receiver"
    sent_mail = wait_for_state(mail.deliveries.get(), Delivery.State.SENT)
    [message] = smtp_server.wait_for(1)
    assert message["Subject"].strip() == f"[benchweb] OPEN regression: {TITLE}"
    first, second = http_receiver.wait_for(2)
    assert first.body != second.body  # each attempt signs its own sent_at
    for request in (first, second):
        signed = "sha256=" + hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
        assert request.headers["x-benchweb-signature"] == signed
    sent_hook = wait_for_state(hook.deliveries.get(), Delivery.State.SENT)
    assert (sent_hook.attempts, sent_hook.response) == (2, "HTTP 200")
    assert (sent_mail.attempts, sent_mail.response) == (1, "250 accepted for 1 recipient")


def test_the_beats_sweep_sends_a_delivery_whose_message_was_lost(
    team, owner, http_receiver, worker_factory, beat_factory, monkeypatch
):
    monkeypatch.setenv("BENCHWEB_DELIVERY_SWEEP_SECONDS", "1")
    hook, _ = save_channel(None, ChannelInput(kind="webhook", url=http_receiver.url), team=team, user=owner)
    # Stored as publish stores it, but its task message never reached Redis.
    lost = Delivery.objects.create(
        channel=hook, event=EVENT, summary="OPEN regression", next_attempt_at=timezone.now() - timedelta(minutes=1)
    )
    worker_factory()
    beat_factory()
    http_receiver.wait_for(1)
    sent = wait_for_state(lost, Delivery.State.SENT)
    assert sent.attempts == 1 and AlertChannel.objects.get(pk=hook.pk).last_sent_at is not None
