"""Each page in its reader's time zone (jobs.clock): their Preferences, else their browser's, else UTC; and a
request whose data nests too deeply to read refused with 400, not a server error."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from jobs import clock, errors
from jobs.models import Preferences

log = logging.getLogger(__name__)


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


class TooDeepMiddleware:
    """A RecursionError out of a view is a request nesting data deeper than Python reads (a JSON field of a form,
    the admin's among them): 400 with what to do, JSON under /api/. The API's parser refuses such bodies before
    any view (jobs.api.parsers.JSONParser); this answers for every other reader, present or to come."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, RecursionError):
            return None
        log.warning("%s %s refused: data nested too deeply to read", request.method, request.path, exc_info=True)
        return errors.refused(request, 400, errors.TOO_DEEP)
