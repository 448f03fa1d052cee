"""Django's migrate, checking what migrating depends on: the models, the database and benchweb's own settings.

Django's migrate runs every system check first, and the URL and template checks import every page, the API and
its schema generator: two thirds of a migrate with nothing to do, paid by every `./bw run`, container start and
upgrade. Those checks say nothing about the schema; they run in `manage.py check` and in `./bw test`.
"""

from __future__ import annotations

from django.core.checks import Tags
from django.core.management.commands import migrate

from jobs.checks import TAG


class Command(migrate.Command):
    requires_system_checks = [Tags.models, Tags.database, TAG]
