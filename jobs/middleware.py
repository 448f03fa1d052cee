"""Each page in its reader's time zone (jobs.clock): their Preferences, else their browser's, else UTC."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from jobs import clock
from jobs.models import Preferences


class TimeZoneMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The API answers in UTC whoever asks (ISO 8601 with its offset); only pages follow the reader.
        if request.path.startswith("/api/"):
            return self.get_response(request)
        preference = ""
        if request.user.is_authenticated:
            # Loaded with the user (jobs.teams.backends), so this asks the database nothing.
            try:
                preference = request.user.preferences.time_zone  # type: ignore[union-attr]
            except Preferences.DoesNotExist:
                preference = ""
        chosen = clock.choose(preference, request.COOKIES.get(clock.COOKIE))
        request.clock = chosen  # type: ignore[attr-defined]  # read by jobs.context_processors and the preferences page
        timezone.activate(chosen.zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
