from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")

application = get_wsgi_application()
# Import every view now rather than in the first request: under `gunicorn --preload` (./bw run) the master does
# it once and its workers share it; without --preload each worker does it as it starts, before it answers.
get_resolver().url_patterns  # noqa: B018  (the attribute loads them)
