"""Real receivers on 127.0.0.1 for the alert channels. Load with `from tests.receivers import *` in conftest.

- `smtp_server`: an aiosmtpd SMTP server collecting every message it is sent, parsed (`.messages`), with the
  envelope's recipients (`.recipients`). `smtp_settings` points Django's EMAIL_* settings at it.
- `http_receiver`: an http.server in a thread recording every request (method, path, headers, raw body). It
  answers 200, or 500 for the next N requests after `fail(N)`, or always `status` after `answer_with(status)`.
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from aiosmtpd.controller import Controller

__all__ = [
    "LOOPBACK", "HttpReceiver", "SmtpServer", "http_receiver", "loopback_allowed", "smtp_server", "smtp_settings",
]  # fmt: skip
# The SMTP server needs a fixed port (aiosmtpd connects to it to see it is up); this session's come from here,
# or from BENCHWEB_TEST_SMTP_PORTS (first-last) when sessions on one machine keep to ranges of their own.
_FIRST, _, _LAST = os.environ.get("BENCHWEB_TEST_SMTP_PORTS", "18200-18249").partition("-")
SMTP_PORTS = range(int(_FIRST), int(_LAST) + 1)
WAIT_S = 30.0


def free_port(ports: range) -> int:
    for port in ports:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1} for the test SMTP server")


def _wait(found: Any, what: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := found()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.05)
    return got


@dataclass
class SmtpServer:
    host: str
    port: int
    messages: list[EmailMessage] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.recipients.append(list(envelope.rcpt_tos))
        self.messages.append(message)  # type: ignore[arg-type]
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = WAIT_S) -> list[EmailMessage]:
        return _wait(lambda: self.messages if len(self.messages) >= count else None, f"{count} e-mails", timeout)


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer("127.0.0.1", free_port(SMTP_PORTS))
    controller = Controller(server, hostname=server.host, port=server.port)
    controller.start()
    try:
        yield server
    finally:
        controller.stop()


@pytest.fixture
def smtp_settings(settings: Any, smtp_server: SmtpServer) -> SmtpServer:
    """Django's real SMTP backend (pytest-django swaps in the in-memory one), pointed at smtp_server."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = smtp_server.host, smtp_server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.DEFAULT_FROM_EMAIL = "benchweb@bench.example.com"
    return smtp_server


LOOPBACK = ["127.0.0.0/8", "::1/128"]


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class HttpReceiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.failures_left = 0
        self.status = 200
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = receiver._answer(Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                                                   body))  # fmt: skip
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"receiver down for the test")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def fail(self, times: int) -> None:
        """Answer 500 to the next `times` requests, then 200 again."""
        self.failures_left = times

    def answer_with(self, status: int) -> None:
        self.status = status

    def _answer(self, request: Received) -> int:
        with self._lock:
            self.requests.append(request)
            if self.failures_left:
                self.failures_left -= 1
                return 500
            return self.status

    def wait_for(self, count: int, timeout: float = WAIT_S) -> list[Received]:
        return _wait(lambda: self.requests if len(self.requests) >= count else None, f"{count} requests", timeout)


@pytest.fixture
def loopback_allowed(settings: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Alert channels may send to loopback, as an operator allows it with BENCHWEB_CHANNEL_ALLOW_NETWORKS (off by
    default): in this process, and in the workers a test starts after it (they take the environment)."""
    settings.CHANNEL_ALLOW_NETWORKS = LOOPBACK
    monkeypatch.setenv("BENCHWEB_CHANNEL_ALLOW_NETWORKS", ",".join(LOOPBACK))
    return LOOPBACK


@pytest.fixture
def http_receiver(loopback_allowed: list[str]) -> Iterator[HttpReceiver]:
    """A receiver on 127.0.0.1; channels may send to it because loopback_allowed allows loopback."""
    receiver = HttpReceiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
