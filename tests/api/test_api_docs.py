"""The interactive API docs in a real browser, under the site's own Content-Security-Policy."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_api_docs_draw_every_operation_from_local_files_under_the_csp(page, live_server):
    User.objects.create_user("reader")
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/runs/{id}/cancel/" in path for path in paths)
    assert page.js_errors == []
    assert requested and all(url.startswith(live_server.url) for url in requested)
