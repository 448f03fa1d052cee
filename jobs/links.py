"""The one way benchweb writes an address for outside the page it is on: a share link shown once, the runs CSV's
run links, the printable report's CSV link, an API answer's link, an alert's links in e-mails and webhooks."""

from __future__ import annotations

from typing import Protocol

from django.conf import settings


class Request(Protocol):
    """A Django request, or DRF's that wraps one."""

    def build_absolute_uri(self, location: str | None = None) -> str: ...


def absolute(url: str, request: Request | None = None) -> str:
    """`url` (a path such as reverse() gives, "/runs/3/") as an address to open from anywhere: on the scheme and
    host the request came in on when there is one (the address the person is using), else on
    BENCHWEB_PUBLIC_URL (work done outside a request: alerts). An address already absolute, or empty, is
    returned as it is."""
    if not url.startswith("/"):
        return url
    if request is not None:
        return request.build_absolute_uri(url)
    return settings.PUBLIC_URL + url
