from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("jobs.api_urls")),
    path("", include("audit.urls")),
    path("", include("jobs.urls")),
]
# A body over the upload limit gets JSON under /api/ and a page that says what to do elsewhere (jobs/errors.py).
handler400 = "jobs.errors.bad_request"
handler404 = "jobs.errors.not_found"
