"""The web application as `./bw run` serves it (benchweb/stack.py): its gunicorn master, which loads the
application once for its workers (--preload), first does what prepare_stack does (migrate, register the demo
target), so Django starts once for both instead of once in a `manage.py prepare_stack` and again in gunicorn:
about a second less before the first page on a small machine. Gunicorn listens only once this module is
loaded, so no page is served before the database is migrated.

BENCHWEB_PREPARE_STACK holds prepare_stack's arguments (empty: migrate only); without it (a web server the
stack restarts) the application is only loaded. A prepare_stack that fails ends the master with its own message
and exit status, as `manage.py prepare_stack` would.
"""

from __future__ import annotations

import os
import shlex

from django.core.management import execute_from_command_line
from django.db import connections

from benchweb.wsgi import application

__all__ = ["application"]

if (prepare := os.environ.get("BENCHWEB_PREPARE_STACK")) is not None:
    execute_from_command_line(["manage.py", "prepare_stack", *shlex.split(prepare)])
    # The workers are forked from this process: none may inherit its database connection.
    connections.close_all()
