"""What benchweb refuses, shared by the pages, the API and the commands.

`FieldRefused`: a use case refusing one field of a request (the page puts it on the form's field, the API answers
a 400 naming the field, jobs/api/errors.py). It lives here, below the use cases that raise it, not in the API kit
above them.

Requests Django refuses before a view sees them (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, too many fields):
the API answers them in its JSON shape and the pages with a page that says what to do, not a bare "Bad Request".

Django raises these while reading request.POST or request.body, which the CSRF middleware already does for
every form post, so for the pages only the 400 handler (benchweb/urls.py) can turn them into an answer.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.defaults import bad_request as django_bad_request
from django.views.defaults import page_not_found as django_page_not_found

from jobs import nesting


class FieldRefused(Exception):
    """A request a use case will not carry out because of one field; the message names the fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


IMPORT_COMMAND = "`manage.py import_results FILE --disk ID`"


def too_big_message(request: HttpRequest) -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    size = request.META.get("CONTENT_LENGTH") or "unknown"
    return (
        f"The request body ({size} bytes) is over the limit of {limit:,} bytes ({limit / 2**20:g} MiB) that "
        "benchweb reads into memory; nothing was stored. Send the output in parts (fewer files per request, "
        f"files as multipart uploads), or import large outputs on the server with {IMPORT_COMMAND}."
    )


def too_many_message(exc: Exception) -> str:
    what = "files" if isinstance(exc, TooManyFilesSent) else "fields"
    return f"The request has too many {what} ({exc}); nothing was stored. Send fewer at a time."


# jobs/nesting.py says why a limit, and why this one.
TOO_DEEP = (
    f"The request holds JSON nested more than {nesting.MAX_DEPTH} levels deep (arrays or objects inside each "
    "other), so it was not read. No benchweb field takes more than a few levels: send each value as its field "
    "describes."
)


def refusal(request: HttpRequest, exc: Exception) -> tuple[int, str] | None:
    """(status, message) for a request Django refused to read, or None for any other exception.

    413 Content Too Large for a body over the limit: the request is well formed, it is only too big, and a client
    (or a proxy, as nginx's client_max_body_size does) can tell that from the status without reading the body.
    """
    if isinstance(exc, RequestDataTooBig):
        return 413, too_big_message(request)
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return 400, too_many_message(exc)
    return None


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: JSON under /api/, a page elsewhere, for what Django refused to read; Django's page otherwise."""
    found = refusal(request, exception)
    if found is None:
        return django_bad_request(request, exception)
    return refused(request, *found)


def refused(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """The answer to a request benchweb would not read: JSON under /api/, a page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return render(request, "request_refused.html", {"message": message}, status=status)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: JSON under /api/ (an id that is not a number, a path no endpoint has); elsewhere Django's view,
    which renders templates/404.html in the site's layout with the request's context (navigation, team)."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"detail": f"No API endpoint or object at {request.path}; /api/docs/ lists the endpoints."}, status=404
        )
    return django_page_not_found(request, exception)
