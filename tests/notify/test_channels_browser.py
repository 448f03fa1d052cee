"""The Alert channels pages in a real Chromium, under the site's CSP: an owner adds a webhook, copies its secret
(shown once), sends a test that the HTTP receiver gets, and reads the delivery log; a refused URL is said on the
form, naming the field."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from django.contrib.auth.models import User

from jobs.models import AlertChannel
from jobs.notify import delivery
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-channels-password-4"


@pytest.fixture
def owner_name(db) -> str:
    teams.place_new_user(User.objects.create_user("pager", password=PASSWORD))
    return "pager"


def test_an_owner_adds_a_webhook_sees_its_secret_once_and_sends_a_test_the_receiver_gets(
    page, live_server, owner_name, http_receiver, screenshot
):
    log_in(page, live_server.url, owner_name, PASSWORD)
    page.get_by_role("link", name="Alert channels").click()
    page.wait_for_url(f"{live_server.url}/channels/")
    page.get_by_text("Webhook", exact=True).click()
    form = page.locator("#add-webhook form")
    form.get_by_label("Name").fill("ops hook")
    form.get_by_label("URL").fill("ftp://files.example.com/in")
    form.get_by_role("button", name="Add webhook channel").click()
    page.wait_for_load_state("load")
    assert "A webhook URL starts with https://" in page.locator("#add-webhook").inner_text()
    assert AlertChannel.objects.count() == 0
    screenshot("refused")
    form = page.locator("#add-webhook form")
    form.get_by_label("URL").fill(f"{http_receiver.url}/benchweb")
    form.get_by_role("button", name="Add webhook channel").click()
    page.wait_for_load_state("load")
    secret = page.locator("#new-secret pre").inner_text().strip()
    hook = AlertChannel.objects.get()
    assert hook.reveal_secret() == secret
    screenshot("secret-once")

    page.get_by_role("button", name="Send test").click()
    page.wait_for_load_state("load")
    assert secret not in page.content(), "the secret was shown a second time"
    delivery.attempt(hook.deliveries.get().pk)  # what the worker's task does
    [request] = http_receiver.requests
    assert request.headers["x-benchweb-signature"] == "sha256=" + hmac.new(secret.encode(), request.body,
                                                                           hashlib.sha256).hexdigest()  # fmt: skip
    page.reload()
    row = page.locator("#deliveries tbody tr").first
    assert "OPEN test: test of channel ops hook" in row.inner_text()
    assert "sent" in row.inner_text() and "HTTP 200" in row.inner_text()
    assert page.evaluate(STICKING_OUT) == [] and page.evaluate(UNLABELLED_CONTROLS) == []
    screenshot("log")
    assert page.js_errors == []


def test_a_viewer_sees_the_channels_and_their_log_but_no_forms(page, live_server, owner_name, http_receiver):
    team = User.objects.get(username=owner_name).memberships.get().team
    viewer = User.objects.create_user("looker", password=PASSWORD)
    team.memberships.create(user=viewer, role="viewer")
    hook = AlertChannel.objects.create(team=team, name="ops", kind="webhook", target=http_receiver.url)
    log_in(page, live_server.url, "looker", PASSWORD)
    page.goto(f"{live_server.url}/channels/")
    assert page.locator("#channels").inner_text().count("ops") == 1
    assert page.locator("#add-webhook").count() == 0
    page.goto(f"{live_server.url}/channels/{hook.pk}/")
    assert page.get_by_role("button", name="Send test").count() == 0
    assert page.get_by_role("button", name="Save").count() == 0
    assert page.js_errors == []


def test_the_add_forms_fit_a_phone_with_every_control_labelled(phone_page, live_server, owner_name, screenshot):
    page = phone_page
    log_in(page, live_server.url, owner_name, PASSWORD)
    page.goto(f"{live_server.url}/channels/")
    for kind in ("email", "webhook", "apprise"):
        if page.locator(f"#add-{kind}[open]").count() == 0:
            page.locator(f"#add-{kind} summary").click()
    assert page.locator("details.add-channel[open]").count() == 3
    assert page.evaluate(STICKING_OUT) == []
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    screenshot("add-forms", on=page)
    assert page.js_errors == []
