"""jobs.links.absolute: the one way an address for outside the page is written."""

from __future__ import annotations

from django.test import RequestFactory

from jobs import links


def test_a_path_is_made_absolute_on_the_host_the_request_came_in_on(settings):
    settings.ALLOWED_HOSTS = ["bench.internal"]
    settings.PUBLIC_URL = "https://bench.example.com"
    request = RequestFactory().get("/shares/", HTTP_HOST="bench.internal", secure=True)
    assert links.absolute("/s/abc/", request) == "https://bench.internal/s/abc/"


def test_without_a_request_a_path_is_made_absolute_on_the_public_url(settings):
    settings.PUBLIC_URL = "https://bench.example.com"
    assert links.absolute("/alerts/3/") == "https://bench.example.com/alerts/3/"


def test_an_address_already_absolute_or_empty_is_kept(settings):
    settings.PUBLIC_URL = "https://bench.example.com"
    assert links.absolute("https://elsewhere.example.org/runs/1/") == "https://elsewhere.example.org/runs/1/"
    assert links.absolute("") == ""
