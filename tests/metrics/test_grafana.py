"""Change points and annotations pushed to Grafana: a local HTTP receiver on 127.0.0.1 stands where Grafana's
POST /api/annotations would, checks the JSON and the Bearer header, and answers as Grafana does."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from jobs import checks
from jobs.metrics import grafana
from jobs.models import Annotation, ChangePoint
from tests.factories import ProfileFactory, nightly_runs, noisy
from tests.world import make_world

TOKEN = "glsa_test-service-account-token"


class Receiver:
    """What the fake Grafana was sent, and what it answers next (status and body)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 200
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {"authorization": self.headers["Authorization"], "content_type": self.headers["Content-Type"]}
                receiver.received.append({"path": self.path, "json": json.loads(body), **headers})
                answer = json.dumps({"id": len(receiver.received), "message": "Annotation added"}).encode()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def wait_for(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"got {len(self.received)} of {count} posts: {self.received}"
            time.sleep(0.2)
        return self.received


@pytest.fixture
def receiver(settings, monkeypatch) -> Iterator[Receiver]:
    """The receiver, and benchweb pointed at it (settings here, the environment for workers started after)."""
    found = Receiver()
    settings.GRAFANA_URL, settings.GRAFANA_TOKEN = found.url, TOKEN
    monkeypatch.setenv("BENCHWEB_GRAFANA_URL", found.url)
    monkeypatch.setenv("BENCHWEB_GRAFANA_TOKEN", TOKEN)
    yield found
    found.server.shutdown()
    found.server.server_close()


def stepped_nights(seed: int = 11):
    world, _ = make_world("ours")
    profile = ProfileFactory(team=world.team, name="nightly", rw="randread")
    rng = random.Random(seed)
    nightly_runs(world.disk, profile=profile, iops=noisy(4000, 18, rng) + noisy(2800, 12, rng))
    return world, ChangePoint.objects.get(disk=world.disk, metric="iops")


@pytest.mark.django_db
def test_a_change_point_is_posted_with_its_time_tags_and_the_bearer_token(receiver):
    _, change = stepped_nights()

    summary = grafana.push(grafana.CHANGE_POINT, change.pk)

    assert summary == f"change_point {change.pk}: Grafana annotation 1"
    [post] = receiver.received
    assert post["path"] == "/api/annotations" and post["authorization"] == f"Bearer {TOKEN}"
    assert post["content_type"] == "application/json"
    body = post["json"]
    assert body["time"] == change.at_ms
    assert body["tags"] == ["benchweb", "change-point", "team:ours", "host:vm", "disk:data", "profile:nightly",
                            "metric:iops", "direction:worse"]  # fmt: skip
    assert body["text"].startswith("total IOPS -3") and f"from run {change.run_id}" in body["text"]


@pytest.mark.django_db
def test_an_annotation_is_posted_with_the_scope_it_concerns(receiver):
    world, _ = make_world("ours")
    note = Annotation.objects.create(team=world.team, host=world.host, at=world.run.finished_at, text="kernel 6.8")

    grafana.push(grafana.ANNOTATION, note.pk)

    body = receiver.received[0]["json"]
    assert body == {
        "time": round(note.at.timestamp() * 1000),
        "tags": ["benchweb", "annotation", "team:ours", "host:vm"],
        "text": "kernel 6.8 (every disk of vm)",
    }


@pytest.mark.django_db
def test_a_refusal_is_not_retried_and_an_unreachable_grafana_is(receiver, caplog):
    world, _ = make_world("ours")
    note = Annotation.objects.create(team=world.team, at=world.run.finished_at, text="DC move")

    receiver.status = 401
    assert grafana.push(grafana.ANNOTATION, note.pk) == f"annotation {note.pk}: refused by Grafana (401)"
    assert "check BENCHWEB_GRAFANA_TOKEN" in caplog.text
    receiver.status = 503
    with pytest.raises(grafana.Unreachable, match="answered 503"):
        grafana.push(grafana.ANNOTATION, note.pk)
    receiver.server.shutdown()
    receiver.server.server_close()
    with pytest.raises(grafana.Unreachable):
        grafana.push(grafana.ANNOTATION, note.pk)


@pytest.mark.django_db
def test_nothing_is_sent_unless_grafana_is_configured(settings, django_capture_on_commit_callbacks):
    world, _ = make_world("ours")
    settings.GRAFANA_URL, settings.GRAFANA_TOKEN = "", ""
    with django_capture_on_commit_callbacks() as callbacks:
        Annotation.objects.create(team=world.team, at=world.run.finished_at, text="not pushed")
    assert callbacks == []
    settings.GRAFANA_URL, settings.GRAFANA_TOKEN = "http://127.0.0.1:9", TOKEN
    with django_capture_on_commit_callbacks() as callbacks:
        note = Annotation.objects.create(team=world.team, at=world.run.finished_at, text="pushed")
        note.text = "edited"
        note.save()  # an edit is not a new annotation
    assert len(callbacks) == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_change_points_found_as_runs_are_recorded_reach_grafana_through_a_worker(receiver, worker_factory):
    worker_factory()  # started after `receiver` set the environment: it posts there
    world, _ = stepped_nights()
    kept = list(ChangePoint.objects.filter(disk=world.disk))
    assert sorted(c.metric for c in kept) == ["bandwidth", "iops"]

    change = next(c for c in kept if c.metric == "iops")
    change.mark_expected(world.owner, "moved to a slower tier")
    note = Annotation.objects.get(kind=Annotation.Kind.EXPECTED)

    deadline = time.monotonic() + 60
    wanted = {(c.at_ms, f"metric:{c.metric}") for c in kept} | {(round(note.at.timestamp() * 1000), "expected")}
    while True:
        got = {(p["json"]["time"], tag) for p in receiver.received for tag in p["json"]["tags"]}
        if wanted <= got:
            break
        assert time.monotonic() < deadline, f"missing {wanted - got}; received {receiver.received}"
        time.sleep(0.3)
    assert {p["authorization"] for p in receiver.received} == {f"Bearer {TOKEN}"}


def test_half_a_grafana_setting_a_bad_address_and_a_short_metrics_token_are_warned_of(settings):
    settings.GRAFANA_URL, settings.GRAFANA_TOKEN, settings.METRICS_TOKEN = "grafana.example.com", "", "short"
    found = {w.id: w.msg for w in checks.prometheus_and_grafana_settings(None)}
    assert set(found) == {"benchweb.W002", "benchweb.W003", "benchweb.W004"}
    assert "BENCHWEB_GRAFANA_TOKEN is not set" in found["benchweb.W003"]
    settings.GRAFANA_URL, settings.GRAFANA_TOKEN = "https://grafana.example.com", TOKEN
    settings.METRICS_TOKEN = "x" * 64
    assert checks.prometheus_and_grafana_settings(None) == []
