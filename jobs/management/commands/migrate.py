"""Django's migrate, checking what migrating depends on, and quick when there is nothing to migrate.

Django's migrate runs every system check first, and the URL and template checks import every page, the API and
its schema generator: two thirds of a migrate with nothing to do, paid by every `./bw run`, container start and
upgrade. Those checks say nothing about the schema; they run in `manage.py check` and in `./bw test`.

With nothing to apply, Django's migrate still imports every migration file, renders the models of every
migration's state and sends post_migrate to every app (about 1.5 s here, against a second for Django to start).
When every migration file on disk is recorded as applied, nothing of that can change the schema: the command
runs the same checks, sends post_migrate to benchweb's own apps (what they keep in step with the code after
every migrate, such as the built-in presets, still happens; Django's content types and permissions change only
with a migration) and says "No migrations to apply." as Django does. Anything else (an app or a migration
named, --plan, --check, --fake, --prune, --run-syncdb, a migration not yet applied, a squashed one not yet
recorded) is Django's own migrate.
"""

from __future__ import annotations

import pkgutil
from importlib.machinery import ModuleSpec
from importlib.util import find_spec
from typing import Any

from django.apps import apps
from django.core.checks import Tags
from django.core.management.commands import migrate
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.db.models.signals import post_migrate

from jobs.checks import TAG

# benchweb's apps: their post_migrate receivers run after every migrate, a quick one too.
OWN_PACKAGES = ("jobs", "audit", "benchweb")
# Options that ask for more than "apply what is new"; any of them set goes the whole way.
_ASKS_FOR_MORE = ("app_label", "migration_name", "plan", "check_unapplied", "fake", "fake_initial", "prune",
                  "run_syncdb")  # fmt: skip


class Command(migrate.Command):
    requires_system_checks = [Tags.models, Tags.database, TAG]

    def execute(self, *args: Any, **options: Any) -> Any:
        if any(options.get(name) for name in _ASKS_FOR_MORE):
            return super().execute(*args, **options)
        files = _migration_files()
        if not _all_applied(options["database"], files):
            return super().execute(*args, **options)
        if not options.get("skip_checks"):
            self.check(tags=self.requires_system_checks, databases=[options["database"]])
        for config in apps.get_app_configs():
            if config.models_module is not None and config.name.partition(".")[0] in OWN_PACKAGES:
                post_migrate.send(sender=config, app_config=config, verbosity=options["verbosity"],
                                  interactive=options["interactive"], using=options["database"], apps=apps,
                                  plan=[])  # fmt: skip
        if options["verbosity"] >= 1:
            self.stdout.write(self.style.MIGRATE_HEADING("Operations to perform:"))
            self.stdout.write(f"  Apply all migrations: {', '.join(sorted(files))}")
            self.stdout.write(self.style.MIGRATE_HEADING("Running migrations:"))
            self.stdout.write("  No migrations to apply.")
        return None


def _all_applied(database: str, files: dict[str, set[str]] | None = None) -> bool:
    """Every migration file of every app (`files`, else found now) is recorded in django_migrations (one query,
    no migration imported)."""
    recorder = MigrationRecorder(connections[database])
    if not recorder.has_table():
        return False
    applied = set(recorder.migration_qs.values_list("app", "name"))
    return all((app, name) in applied for app, names in (files or _migration_files()).items() for name in names)


def _migration_files() -> dict[str, set[str]]:
    """The migration names of each app that has migrations, as Django's loader finds them on disk."""
    found = {}
    for config in apps.get_app_configs():
        module, _ = MigrationLoader.migrations_module(config.label)
        spec = _spec(module) if module else None
        if spec is None or spec.submodule_search_locations is None:
            continue
        found[config.label] = {
            name for _, name, is_package in pkgutil.iter_modules(spec.submodule_search_locations)
            if not is_package and name[0] not in "_~"
        }  # fmt: skip
    return found


def _spec(module: str) -> ModuleSpec | None:
    """The migrations package's spec, None when the app has none (find_spec imports only its parents)."""
    try:
        return find_spec(module)
    except ModuleNotFoundError:
        return None
