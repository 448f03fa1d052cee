"""Issue 18's alerts end to end, through the real parts only: the product's own `./bw run` stack (embedded Redis,
gunicorn, Celery worker and beat), driven as a person drives it (sign up, an API token from manage.py, then the
REST API), a real OpenSSH server with real fio as the benchmarked host, a real SMTP server and a real HTTP
receiver on 127.0.0.1. Three alerts open and reach both channels: a run that fails on the test sshd, a 30 % step
in an imported history of 30 nights, and a disk whose daily schedule never brought a successful run; then the
failed workload succeeds and its alert resolves, which both channels hear of too."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.receivers import LOOPBACK, HttpReceiver, Received, SmtpServer
from tests.stacks import ROOT, WAIT_S, Stack, final, free_port, poll, running_stack, sign_up, stack_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURE = ROOT / "tests/fixtures/fio-3.33-randread-jsonplus.json"
ONCALL = "storage-oncall@example.com"


@pytest.fixture
def stack(tmp_path: Path, smtp_server: SmtpServer) -> Iterator[Stack]:
    """`./bw run` with its mail going to smtp_server, its links on its own address, retries after half a second,
    and the alerts sweep every 2 s (the default minute would make the stale alert the slowest part)."""
    var_dir, port = tmp_path / "var", free_port()
    url = f"http://127.0.0.1:{port}"
    env = stack_env(var_dir, port) | {
        "EMAIL_HOST": smtp_server.host, "EMAIL_PORT": str(smtp_server.port), "DEFAULT_FROM_EMAIL": "bench@example.com",
        "BENCHWEB_PUBLIC_URL": url, "BENCHWEB_DELIVERY_RETRY_SECONDS": "0.5,0.5",
        "BENCHWEB_ALERTS_SWEEP_SECONDS": "2", "BENCHWEB_TICK_SECONDS": "1", "BENCHWEB_DEMO_TARGET": "0",
        # The webhook receiver is on 127.0.0.1, where channels may send only when the operator allows it.
        "BENCHWEB_CHANNEL_ALLOW_NETWORKS": ",".join(LOOPBACK),
    }  # fmt: skip
    with running_stack(var_dir, env):
        browser = sign_up(url, "olga", "a-long-test-password-1")
        stack = Stack(url, env, requests.Session(), browser)
        token = stack.manage("create_api_token", "olga", "--name", "e2e").strip()
        stack.api.headers["Authorization"] = f"Bearer {token}"
        yield stack


def night(level: float, when: datetime) -> str:
    """The real fio 3.33 json+ output of a 4k randread, the I/O it counted (so its IOPS and bandwidth) scaled to
    `level` of what it measured and its timestamps moved to `when`: one night of a constructed history (each
    night a distinct output, as benchweb refuses the same output twice on a disk)."""
    doc = json.loads(FIXTURE.read_text())
    read = doc["jobs"][0]["read"]
    for key in ("total_ios", "io_bytes", "io_kbytes"):
        read[key] = round(read[key] * level)
    for key in ("iops", "iops_min", "iops_max", "iops_mean", "bw", "bw_bytes", "bw_min", "bw_max", "bw_mean"):
        read[key] = round(read[key] * level, 6)
    doc["timestamp"], doc["timestamp_ms"] = int(when.timestamp()), int(when.timestamp() * 1000)
    doc["time"] = when.strftime("%a %b %d %H:%M:%S %Y")
    return json.dumps(doc, indent=2)


def signed_by(secret: str, request: Received) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(request.headers["x-benchweb-signature"], expected)


def webhook_of(receiver: HttpReceiver, kind: str, event: str) -> Received:
    """The first webhook request announcing `event` for an alert of `kind`."""

    def found() -> Received | None:
        for request in list(receiver.requests):
            body = request.json()
            if body["event"] == event and body["alert"]["kind"] == kind:
                return request
        return None

    return poll(f"a webhook announcing {event} {kind}", found)


def email_of(server: SmtpServer, kind: str, word: str) -> Any:
    """The first e-mail whose subject says `word` (OPEN, RESOLVED) about an alert of `kind`."""
    start = f"[benchweb] {word} {kind.replace('_', ' ')}: "
    return poll(f"an e-mail '{start}…'", lambda: next((m for m in list(server.messages)
                                                        if m["Subject"].startswith(start)), None))  # fmt: skip


def alert_of(stack: Stack, kind: str, state: str, timeout: float = WAIT_S) -> dict[str, Any]:
    """The one alert of `kind` in `state`, as GET /api/v1/alerts/ lists it."""

    def found() -> dict[str, Any] | None:
        listed = stack.call("GET", f"/api/v1/alerts/?kind={kind}&state={state}")["results"]
        assert len(listed) <= 1, listed  # one alert per condition, never a storm
        return listed[0] if listed else None

    return poll(f"the {kind} alert to be {state} in GET /api/v1/alerts/", found, timeout)


def assert_told_both_channels(
    stack: Stack, smtp: SmtpServer, receiver: HttpReceiver, secret: str, alert: dict[str, Any], event: str
) -> None:
    """The alert's `event` arrived as an e-mail to the on-call address and as a webhook signed with the channel's
    secret (the HMAC recomputed here from the raw body), both naming the alert and linking to it on the stack."""
    word = {"opened": "OPEN", "resolved": "RESOLVED"}[event]
    mail = email_of(smtp, alert["kind"], word)
    assert mail["To"] == ONCALL and mail["From"] == "bench@example.com"
    # The subject names the kind once: a title starting with its words ("Run failed: …") is given without them.
    kind_words = alert["kind"].replace("_", " ")
    title = alert["title"]
    if title.lower().startswith(kind_words + ":"):
        title = title[len(kind_words) + 1 :].strip()
    assert title and title in " ".join(mail["Subject"].split())
    text = mail.get_content()
    link = f"{stack.url}/alerts/{alert['id']}/"
    assert link in text and alert["links"]["url"] == link
    assert stack.browser.get(link, timeout=30).status_code == 200  # the link opens the alert's page

    hook = webhook_of(receiver, alert["kind"], event)
    assert signed_by(secret, hook), hook.headers
    assert not signed_by(secret + "x", hook)
    body = hook.json()
    assert body["alert"]["id"] == alert["id"] and body["alert"]["url"] == link
    assert hook.headers["x-benchweb-event"] == event and hook.headers["x-benchweb-timestamp"] == body["sent_at"]


def test_a_failed_run_a_regression_and_a_stale_schedule_reach_email_and_a_signed_webhook_and_a_success_resolves(
    fio_installed, sshd, http_receiver, smtp_server, stack, tmp_path
):
    # The channels, as an owner adds them: the webhook's signing secret is in this one answer only.
    stack.call("POST", "/api/v1/alert-channels/", 201, kind="email", name="on-call", addresses=[ONCALL])
    hook = stack.call("POST", "/api/v1/alert-channels/", 201, kind="webhook", name="ops bot",
                      url=f"{http_receiver.url}/benchweb")  # fmt: skip
    secret = hook["secret"]
    assert len(secret) >= 32 and stack.call("GET", f"/api/v1/alert-channels/{hook['id']}/")["secret"] != secret

    # The test sshd, registered with its key and its host key compared before it is approved.
    host = stack.call("POST", "/api/v1/hosts/", 201, name="loopback", address=sshd.address, port=sshd.port,
                      username=sshd.username, private_key=sshd.private_key)  # fmt: skip
    scanned = stack.call("POST", f"/api/v1/hosts/{host['id']}/scan-key/")
    assert scanned["fingerprint"] == sshd.host_key.fingerprint
    stack.call("POST", f"/api/v1/hosts/{host['id']}/approve-key/", fingerprint=scanned["fingerprint"])
    profile = stack.call("POST", "/api/v1/profiles/", 201, name="quick randwrite", tool="fio", rw="randwrite",
                         block_size_bytes=4096, iodepth=1, jobs=1, runtime_s=3, time_based=True, ioengine="psync",
                         direct=False, size_bytes=16 * 2**20)  # fmt: skip

    def disk(label: str, target: Path) -> dict[str, Any]:
        return stack.call("POST", "/api/v1/disks/", 201, host=host["id"], label=label, target_path=str(target),
                          disk_type="custom")  # fmt: skip

    # 1. run_failed: a writing run into a directory that does not exist is refused on the host.
    missing = tmp_path / "scratch"
    scratch = disk("scratch", missing)
    failed = stack.call("POST", "/api/v1/runs/", 201, disk=scratch["id"], profile=profile["id"])

    # 2. regression: 30 nights imported as their outputs, the last 12 at 70 % of the first 18.
    history = disk("archive", tmp_path / "archive")
    rng, last_night = random.Random(18), datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    for number in range(30):
        when = last_night - timedelta(days=29 - number)
        level = (1.0 if number < 18 else 0.7) * (1 + rng.uniform(-0.03, 0.03))
        stack.call("POST", "/api/v1/import/", 201, disk=history["id"], tool="fio", name=f"night {number + 1}",
                   text=night(level, when), finished_at=when.isoformat())  # fmt: skip

    # 3. stale: a daily schedule on a disk that never had a successful run, made three days ago. It fires 12 hours
    # from now, so nothing runs during the test; the time it was made is set where the stack keeps it.
    nightly = disk("nightly", tmp_path / "nightly")
    hour = (datetime.now(UTC).hour + 12) % 24
    schedule = stack.call("POST", "/api/v1/schedules/", 201, name="nightly", kind="cron", cron=f"0 {hour} * * *",
                          timezone="UTC", targets=[nightly["id"]], profiles=[profile["id"]])  # fmt: skip
    stack.manage("shell", "-c", (
        "from datetime import timedelta; from django.utils import timezone; from jobs.models import Schedule; "
        f"Schedule.objects.filter(pk={schedule['id']}).update(created_at=timezone.now() - timedelta(days=3))"
    ))  # fmt: skip

    ended = final(stack, failed["id"])
    assert ended["state"] == "error" and str(missing) in ended["explanation"], ended

    run_failed = alert_of(stack, "run_failed", "open")
    assert run_failed["disk"] == scratch["id"] and run_failed["runs"] == [failed["id"]]
    assert_told_both_channels(stack, smtp_server, http_receiver, secret, run_failed, "opened")

    regression = alert_of(stack, "regression", "open")
    assert regression["disk"] == history["id"] and regression["change_point"] is not None
    assert re.search(r"Total IOPS -(29|30|31|32) %", regression["summary"]), regression["summary"]
    assert_told_both_channels(stack, smtp_server, http_receiver, secret, regression, "opened")

    # Only the beat's sweep opens it: within a few of its 2 s rounds (the default minute would miss this).
    stale = alert_of(stack, "stale", "open", timeout=20)
    assert stale["disk"] == nightly["id"] and stale["schedule"] == schedule["id"]
    assert "has had no successful run yet" in stale["summary"]
    assert_told_both_channels(stack, smtp_server, http_receiver, secret, stale, "opened")

    # The failed workload succeeds once its directory exists: the alert resolves and both channels hear of it.
    missing.mkdir()
    fixed = stack.call("POST", "/api/v1/runs/", 201, disk=scratch["id"], profile=profile["id"])
    done = final(stack, fixed["id"])
    assert done["state"] == "succeeded", done["explanation"]
    resolved = alert_of(stack, "run_failed", "resolved")
    assert resolved["id"] == run_failed["id"]
    assert resolved["resolution"].startswith(f"run #{fixed['id']} of quick randwrite succeeded at ")
    assert_told_both_channels(stack, smtp_server, http_receiver, secret, resolved, "resolved")
    open_alerts = stack.call("GET", "/api/v1/alerts/?state=open")["results"]
    # The quick profile reads a small file without O_DIRECT: its runs are rightly judged "cache suspected".
    assert {a["kind"] for a in open_alerts} == {"regression", "stale", "run_verdict"}
    verdict = next(a for a in open_alerts if a["kind"] == "run_verdict")
    assert "cache suspected" in verdict["summary"], verdict["summary"]

    # Every webhook was signed with the secret, and each delivery shows as sent in the channel's log (the worker
    # writes that once the receiver has answered, so a moment after the last request arrived).
    assert all(signed_by(secret, request) for request in http_receiver.requests)

    def all_sent() -> list[dict[str, Any]] | None:
        log = stack.call("GET", f"/api/v1/alert-channels/{hook['id']}/deliveries/")["results"]
        return log if {entry["state"] for entry in log} == {"sent"} else None

    assert len(poll("every webhook delivery to be logged as sent", all_sent, timeout=10)) >= 4
