from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("jobs.api.urls")),
    path("", include("audit.urls")),
    path("", include("jobs.urls")),
]
