from __future__ import annotations

from django.urls import path

from jobs import chart_views

urlpatterns = [
    path("disks/<int:pk>/series.json", chart_views.disk_series, name="disk_series"),
    path("runs/<int:pk>/series.json", chart_views.run_series, name="run_series"),
]
