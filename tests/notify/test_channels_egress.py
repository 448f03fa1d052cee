"""Where alert channels may send: cloud metadata and link-local addresses never, loopback and private networks only
where BENCHWEB_CHANNEL_ALLOW_NETWORKS allows them, judged when a channel is saved and again, on the address
connected to, before each delivery; a URL's user:password@ never shown back.

Nothing here connects anywhere but 127.0.0.1: a refused address is refused before any socket opens, and the
addresses that are accepted but not loopback are only saved, never sent to."""

from __future__ import annotations

import base64
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from jobs import crypto, egress
from jobs.models import AlertChannel, Delivery
from jobs.notify import delivery, publish, senders
from jobs.notify.channels import ChannelInput, save_channel
from tests.builders import own_database
from tests.notify.channels import EVENT, client_for, deliver_all, post

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent.parent
CHANNELS = "/api/v1/alert-channels/"
MASK = "\N{BULLET}" * 3


@pytest.fixture
def api(owner, team) -> Client:
    return client_for(owner, team)


@pytest.fixture
def nothing_allowed(settings: Any) -> None:
    settings.CHANNEL_ALLOW_NETWORKS = []


def test_the_allow_list_is_empty_when_the_operator_sets_nothing():
    env = {k: v for k, v in os.environ.items() if k != "BENCHWEB_CHANNEL_ALLOW_NETWORKS"}
    env["BENCHWEB_VAR_DIR"] = os.environ.get("BENCHWEB_VAR_DIR", str(ROOT / "var"))
    read = subprocess.run(
        [sys.executable, "-c", "import benchweb.settings as s; print(repr(s.CHANNEL_ALLOW_NETWORKS))"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert read.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("kind", "url", "words"),
    [
        ("webhook", "http://127.0.0.1:8080/hook", "127.0.0.1 is a loopback address"),
        ("webhook", "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("webhook", "http://10.0.0.1/hook", "10.0.0.1 is a private address"),
        ("webhook", "https://[::1]:8443/hook", "::1 is a loopback address"),
        ("webhook", "http://localhost:8080/hook", "localhost resolves to 127.0.0.1: 127.0.0.1 is a loopback"),
        ("webhook", "http://2130706433/hook", "resolves to 127.0.0.1"),  # 127.0.0.1 written as one number
        ("webhook", "http://[::ffff:10.0.0.1]/hook", "10.0.0.1 is a private address"),
        ("webhook", "http://100.64.0.1/hook", "carrier-grade NAT"),
        ("webhook", "http://0.0.0.0:8080/hook", "the unspecified address"),
        ("apprise", "json://10.0.0.1:8080/apprise", "10.0.0.1 is a private address"),
        ("apprise", "ntfys://user:pw@192.168.1.5/alerts", "192.168.1.5 is a private address"),
        ("apprise", "mailto://user:pw@example.com?smtp=127.0.0.1", "127.0.0.1 is a loopback address"),
    ],
)
def test_a_default_configuration_refuses_loopback_private_and_metadata_at_save_naming_the_field(
    api, nothing_allowed, kind, url, words
):
    refused = post(api, CHANNELS, {"kind": kind, "url": url, "name": "x"})
    assert refused.status_code == 400, refused.content
    assert list(refused.json()) == ["url"]
    [message] = refused.json()["url"]
    assert message.startswith("benchweb will not send alerts to this URL: ") and words in message
    assert "BENCHWEB_CHANNEL_ALLOW_NETWORKS" in message
    assert AlertChannel.objects.count() == 0


def test_the_channel_form_shows_the_refusal_on_its_url_field(owner_client, nothing_allowed):
    page = owner_client.post("/channels/", {"kind": "webhook", "webhook-url": "http://127.0.0.1:9/hook"})
    assert page.status_code == 200
    assert page.context["forms"]["webhook"].errors["url"] == [
        "benchweb will not send alerts to this URL: 127.0.0.1 is a loopback address; to send there, set "
        "BENCHWEB_CHANNEL_ALLOW_NETWORKS to allow it (e.g. BENCHWEB_CHANNEL_ALLOW_NETWORKS=127.0.0.1/32)."
    ]
    assert AlertChannel.objects.count() == 0


def test_the_allow_list_admits_exactly_its_networks(api, settings):
    settings.CHANNEL_ALLOW_NETWORKS = ["127.0.0.0/8", "10.1.2.0/24"]
    for admitted in ("http://127.0.0.5:9/", "http://10.1.2.7/hook", "http://10.1.2.255/", "http://localhost:9/"):
        saved = post(api, CHANNELS, {"kind": "webhook", "url": admitted})
        assert saved.status_code == 201, (admitted, saved.content)
    for refused in ("http://10.1.3.1/", "http://10.1.1.255/", "http://[::1]:9/", "http://192.168.1.1/"):
        answer = post(api, CHANNELS, {"kind": "webhook", "url": refused})
        assert answer.status_code == 400 and "set BENCHWEB_CHANNEL_ALLOW_NETWORKS" in answer.json()["url"][0], refused
    assert AlertChannel.objects.count() == 4


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://169.254.170.2/v2/credentials",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://168.63.129.16/machine?comp=goalstate",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[fe80::1]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/",
    ],
)
def test_metadata_addresses_are_refused_even_when_the_allow_list_includes_everything(api, settings, url):
    settings.CHANNEL_ALLOW_NETWORKS = ["0.0.0.0/0", "::/0"]
    refused = post(api, CHANNELS, {"kind": "webhook", "url": url})
    assert refused.status_code == 400, refused.content
    assert "benchweb never sends there" in refused.json()["url"][0]
    assert post(api, CHANNELS, {"kind": "apprise", "url": "json://" + url.split("://", 1)[1]}).status_code == 400
    assert post(api, CHANNELS, {"kind": "webhook", "url": "http://10.0.0.1/hook"}).status_code == 201
    assert AlertChannel.objects.count() == 1


def test_a_malformed_allow_list_stops_the_start_with_the_entry_named(settings):
    from jobs.checks import channel_allow_networks_are_networks

    settings.CHANNEL_ALLOW_NETWORKS = ["127.0.0.0/8", "10.1.2.0/33"]
    [error] = channel_allow_networks_are_networks(None)
    assert error.id == "benchweb.E001" and "'10.1.2.0/33' is not a network" in error.msg


# ------------------------------------------------------------------------------------------- at send


def test_a_webhook_saved_while_allowed_is_refused_at_send_once_the_setting_no_longer_allows_it(
    team, owner, http_receiver, settings
):
    hook, _ = save_channel(None, ChannelInput(kind="webhook", url=f"{http_receiver.url}/hook"), team=team, user=owner)
    settings.CHANNEL_ALLOW_NETWORKS = []
    settings.DELIVERY_RETRY_SECONDS = [0.0, 0.0, 0.0]
    publish(team.pk, EVENT)
    delivery.attempt(hook.deliveries.get().pk)
    gave_up = hook.deliveries.get()
    hook.refresh_from_db()
    assert (gave_up.state, gave_up.attempts, gave_up.next_attempt_at) == (Delivery.State.GAVE_UP, 1, None)
    assert gave_up.error.startswith("Not sent, and not tried again: 127.0.0.1 is a loopback address")
    assert "set BENCHWEB_CHANNEL_ALLOW_NETWORKS" in gave_up.error
    assert http_receiver.requests == []
    assert hook.failures_in_a_row == 1 and hook.last_error == gave_up.error


def test_an_apprise_channel_saved_while_allowed_is_refused_at_send_once_the_setting_no_longer_allows_it(
    team, owner, http_receiver, settings
):
    port = http_receiver.url.rsplit(":", 1)[1]
    chat, _ = save_channel(None, ChannelInput(kind="apprise", url=f"json://127.0.0.1:{port}/"), team=team, user=owner)
    settings.CHANNEL_ALLOW_NETWORKS = []
    publish(team.pk, EVENT)
    gave_up = deliver_all(chat)
    assert (gave_up.state, gave_up.attempts) == (Delivery.State.GAVE_UP, 1)
    assert "127.0.0.1 is a loopback address" in gave_up.error and http_receiver.requests == []


class Resolver:
    """What names ending in .rebind.test resolve to, in turn (the last answer stays), and who asked."""

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []

    def answer(self, host: str, *addresses: str) -> None:
        self.answers[host] = list(addresses)
        self.asked.clear()


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    """A stand-in for DNS, for names ending in .rebind.test only (every other name goes to the real resolver).

    A stub because the real thing cannot be had here: a name that resolves to one address when the channel is
    saved and to another when it is sent needs a DNS server the test controls, and the resolver's server is the
    machine's (/etc/resolv.conf), not ours. No connection is ever made to an address it gives that is not
    loopback: such an address is only judged at saving."""
    resolver = Resolver()
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(host, str) and host.endswith(".rebind.test")):
            return real(host, port, *args, **kwargs)
        resolver.asked.append(host)
        answers = resolver.answers[host]
        address = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return resolver


def test_a_name_that_resolved_public_at_save_and_resolves_to_loopback_at_send_is_refused_at_send(
    team, owner, http_receiver, settings, resolver
):
    settings.CHANNEL_ALLOW_NETWORKS = []
    port = http_receiver.url.rsplit(":", 1)[1]
    resolver.answer("hooks.rebind.test", "93.184.215.14")
    hook, _ = save_channel(
        None, ChannelInput(kind="webhook", url=f"http://hooks.rebind.test:{port}/hook"), team=team, user=owner
    )
    resolver.answer("hooks.rebind.test", "127.0.0.1")
    publish(team.pk, EVENT)
    gave_up = deliver_all(hook)
    assert (gave_up.state, gave_up.attempts) == (Delivery.State.GAVE_UP, 1)
    assert gave_up.error.startswith("Not sent, and not tried again: hooks.rebind.test resolves to 127.0.0.1: ")
    assert http_receiver.requests == []


def test_a_webhook_connects_to_the_address_it_judged_and_keeps_the_name_in_the_host_header(
    team, owner, http_receiver, settings, resolver
):
    # Only 127.0.0.1 is allowed. At sending, the name answers 127.0.0.1 and then 127.0.0.2 (outside the
    # allow-list, nothing listening): a second resolution when connecting, a rebinding window, would fail.
    settings.CHANNEL_ALLOW_NETWORKS = ["127.0.0.1/32"]
    port = http_receiver.url.rsplit(":", 1)[1]
    resolver.answer("hooks.rebind.test", "127.0.0.1")
    hook, _ = save_channel(
        None, ChannelInput(kind="webhook", url=f"http://hooks.rebind.test:{port}/hook"), team=team, user=owner
    )
    resolver.answer("hooks.rebind.test", "127.0.0.1", "127.0.0.2")
    publish(team.pk, EVENT)
    sent = deliver_all(hook)
    assert sent.state == Delivery.State.SENT, sent.error
    [request] = http_receiver.requests
    assert request.headers["host"] == f"hooks.rebind.test:{port}" and request.path == "/hook"
    assert resolver.asked == ["hooks.rebind.test"]


# --------------------------------------------------------------------------------------- TLS when pinned


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """An HTTPS receiver on 127.0.0.1 whose certificate names localhost only: its URL's port, the CA file, and
    the server names (SNI) clients asked for."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)

    def sni(_socket: Any, server_name: str, _context: Any) -> None:
        asked.append(server_name)

    context.sni_callback = sni
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield str(server.server_address[1]), cert_file, asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_pinned_https_connection_still_checks_the_certificate_against_the_name_and_sends_it_as_sni(tls_receiver):
    port, ca, asked = tls_receiver
    with requests.Session() as session:
        session.trust_env = False
        session.mount("https://", egress.PinnedAdapter(egress.parse_networks(["127.0.0.0/8"])))
        answer = session.post(f"https://localhost:{port}/hook", data=b"{}", verify=str(ca), timeout=10)
        assert answer.status_code == 204 and asked == ["localhost"]
        # The same receiver by address: its certificate does not name 127.0.0.1, and the check says so.
        with pytest.raises(requests.exceptions.SSLError, match=r"127\.0\.0\.1"):
            session.post(f"https://127.0.0.1:{port}/hook", data=b"{}", verify=str(ca), timeout=10)
    with requests.Session() as refusing, pytest.raises(egress.Refused, match=r"localhost resolves to 127\.0\.0\.1"):
        refusing.mount("https://", egress.PinnedAdapter([]))
        refusing.post(f"https://localhost:{port}/hook", data=b"{}", verify=str(ca), timeout=10)
    assert asked == ["localhost", None]  # by address, no name is sent; the refused one never connected


# ------------------------------------------------------------------------------------ credentials in URLs


def test_a_webhook_urls_password_is_stored_encrypted_and_shown_masked_everywhere(
    api, team, owner_client, http_receiver, settings
):
    settings.DELIVERY_RETRY_SECONDS = [0.0]
    host = http_receiver.url.removeprefix("http://")
    url = f"http://bench:s3cr3t-pw@{host}/hook"
    created = post(api, CHANNELS, {"kind": "webhook", "url": url, "name": "ops"})
    assert created.status_code == 201, created.content
    assert created.json()["target"] == f"http://bench:{MASK}@{host}/hook"
    hook = AlertChannel.objects.get()
    assert "s3cr3t-pw" not in hook.target and "s3cr3t-pw" not in hook.url_token
    assert crypto.decrypt(hook.url_token) == url
    http_receiver.fail(1)
    publish(team.pk, EVENT)
    deliver_all(hook)
    _, second = http_receiver.requests
    assert second.headers["authorization"] == "Basic " + base64.b64encode(b"bench:s3cr3t-pw").decode()
    shown = [
        created, api.get(CHANNELS), api.get(f"{CHANNELS}{hook.pk}/"), api.get(f"{CHANNELS}{hook.pk}/deliveries/"),
        owner_client.get("/channels/"), owner_client.get(f"/channels/{hook.pk}/"),
    ]  # fmt: skip
    for answer in shown:
        assert answer.status_code == 200 or answer is created
        assert "s3cr3t-pw" not in answer.content.decode()
    assert f"bench:{MASK}@" in owner_client.get(f"/channels/{hook.pk}/").content.decode()


def test_a_delivery_error_never_shows_the_urls_password(team, owner, settings, loopback_allowed):
    settings.DELIVERY_RETRY_SECONDS = [0.0]
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"http://bench:s3cr3t-pw@127.0.0.1:{port}/hook"
    hook, _ = save_channel(None, ChannelInput(kind="webhook", url=url), team=team, user=owner)
    publish(team.pk, EVENT)
    failed = deliver_all(hook)
    hook.refresh_from_db()
    assert failed.state == Delivery.State.GAVE_UP and "Could not reach the webhook" in failed.error
    assert "s3cr3t-pw" not in failed.error + hook.last_error
    # Whatever a library puts in its words (the URL, or the password alone), the log shows it masked.
    quoted = senders.unmasked(senders.Outcome(False, error=f"could not reach {url} (as bench:s3cr3t-pw)"), url)
    assert quoted.error == f"could not reach http://bench:{MASK}@127.0.0.1:{port}/hook (as bench:{MASK})"


def test_the_edit_form_keeps_a_masked_password_and_asks_for_it_again_when_the_url_changes(
    team, owner, owner_client, loopback_allowed
):
    url = "http://bench:s3cr3t-pw@127.0.0.1:9/hook"
    hook, _ = save_channel(None, ChannelInput(kind="webhook", url=url, name="ops"), team=team, user=owner)
    page = owner_client.get(f"/channels/{hook.pk}/").content.decode()
    masked = f"http://bench:{MASK}@127.0.0.1:9/hook"
    assert f'value="{masked}"' in page and "s3cr3t-pw" not in page
    kept = owner_client.post(f"/channels/{hook.pk}/", {"name": "ops renamed", "url": masked, "enabled": "on"})
    assert kept.status_code == 302
    hook.refresh_from_db()
    assert (hook.name, hook.reveal_url()) == ("ops renamed", url)
    moved = owner_client.post(f"/channels/{hook.pk}/", {"name": "ops", "url": masked.replace("/hook", "/in")})
    assert moved.status_code == 200
    assert moved.context["form"].errors["url"] == [
        f"This URL holds the masked password {MASK}; type the password again."
    ]
    hook.refresh_from_db()
    assert (hook.name, hook.reveal_url()) == ("ops renamed", url)


@pytest.mark.slow  # shared: its own database migrated from nothing (tests.builders.own_database)
@pytest.mark.django_db(transaction=True)
def test_migration_0020_encrypts_the_stored_webhook_urls_and_masks_what_is_shown():
    before, after = [("jobs", "0019_alert_channels")], [("jobs", "0020_channel_url_token")]
    with own_database():
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        old = MigrationExecutor(connection).loader.project_state(before).apps
        team = old.get_model("jobs", "Team").objects.create(name="t")
        Channel = old.get_model("jobs", "AlertChannel")
        url = "https://bench:s3cr3t-pw@hooks.example.com/in"
        hook = Channel.objects.create(team=team, name="hook", kind="webhook", target=url)
        token = crypto.encrypt("slack://a/b/c")
        chat = Channel.objects.create(team=team, name="chat", kind="apprise", target="slack://a/b/…",
                                      apprise_url_token=token)  # fmt: skip
        MigrationExecutor(connection).migrate(after)
        migrated = AlertChannel.objects.get(pk=hook.pk)
        assert migrated.target == f"https://bench:{MASK}@hooks.example.com/in"
        assert migrated.reveal_url() == url
        assert AlertChannel.objects.get(pk=chat.pk).reveal_url() == "slack://a/b/c"
