"""A start-up carries what it needs, not every library a page may one day call (issue 29, item 10): the web
server, the worker, beat and every manage.py command start Django and import the models, the tasks and the URLs;
numpy, scipy, ruptures and Apprise are imported where they are used (bench/startup.py measures the time and
memory this saves)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
HEAVY = ("numpy", "scipy", "ruptures", "apprise")

STARTS_DJANGO = f"""
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "benchweb.settings"
import django
django.setup()
import jobs.models, jobs.tasks, benchweb.urls, benchweb.celery, benchweb.wsgi  # noqa: E401
print(" ".join(name for name in {HEAVY!r} if name in sys.modules))
"""


def test_starting_django_with_the_models_tasks_and_urls_imports_no_numpy_scipy_ruptures_or_apprise(tmp_path):
    # A process of its own: this test session has long imported them all.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"BENCHWEB_VAR_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", STARTS_DJANGO], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"imported at start-up: {done.stdout.strip()}"


def test_change_points_and_the_statistics_still_compute_once_their_libraries_load_on_first_use(tmp_path):
    check = """
import sys
from jobs.analysis import changepoints, stability, stats
assert "scipy" not in sys.modules and "ruptures" not in sys.modules and "numpy" not in sys.modules
points = [changepoints.Point(i, i, 100.0 if i < 15 else 70.0) for i in range(30)]
found = changepoints.detect(points)
assert [c.first.run_id for c in found] == [15], found
assert stats.compare([1, 2, 3, 4, 5, 6], [11, 12, 13, 14, 15, 16]).verdict == stats.SIGNIFICANT
assert round(stability.coefficient_of_variation([1.0, 3.0]), 3) == 0.5
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.stdout.strip() == "ok", done.stderr


MIGRATE_LOADS = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "benchweb.settings"
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", "migrate", "--noinput", "-v", "0"])
print(" ".join(name for name in ("paramiko", "requests", "celery", "kombu", "drf_spectacular.views",
                                 "rest_framework.serializers", "jobs.disks.pages", "jobs.limits", "jobs.runners",
                                 "croniter", "yaml") if name in sys.modules))
"""


def test_a_migrate_with_nothing_to_do_loads_no_ssh_stack_http_client_celery_page_catalog_or_runner(tmp_path):
    # Each is loaded where it is used (a session, a channel's delivery, a task sent or run, a request, a disk's
    # limits, a run's command line, a schedule's next fire): a migrate, which every container start pays, needs
    # none of them. (An allow-list of channel networks, which the tests set for their loopback receivers, is
    # parsed by the module that delivers: not this case.)
    drop = ("DATABASE_URL", "BENCHWEB_CHANNEL_ALLOW_NETWORKS")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"BENCHWEB_VAR_DIR": str(tmp_path)}
    for _ in range(2):  # the first creates the database (a migration's code may load what it needs); then none
        done = subprocess.run([sys.executable, "-c", MIGRATE_LOADS], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=180, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"loaded by a migrate: {done.stdout.strip()}"


def test_migrate_runs_the_checks_a_schema_depends_on_and_benchweb_s_own_but_not_the_page_checks(tmp_path):
    from django.core.checks import Tags
    from django.core.management import get_commands, load_command_class

    command = load_command_class(get_commands()["migrate"], "migrate")
    assert set(command.requires_system_checks) == {Tags.models, Tags.database, "benchweb"}
    # benchweb's own check still stops a migrate: an allow-list that is no network list.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        "BENCHWEB_VAR_DIR": str(tmp_path), "BENCHWEB_CHANNEL_ALLOW_NETWORKS": "10.0.0.0/8,not-a-network"}  # fmt: skip
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert done.returncode != 0
    assert "benchweb.E001" in done.stderr and "not-a-network" in done.stderr, done.stderr


def test_a_migrate_with_every_file_applied_imports_no_migration_and_says_so_as_django_does(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"BENCHWEB_VAR_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert first.returncode == 0 and "Applying jobs.0001_initial... OK" in first.stdout, first.stderr
    again = """
import sys
from django.core.management import call_command
call_command("migrate", verbosity=1)
print("imported:", sorted(name for name in sys.modules if ".migrations.0" in name))
"""
    done = subprocess.run([sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = "
                           "'benchweb.settings'; django.setup()\n" + again], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Apply all migrations: admin, api, audit, auth, axes, contenttypes, jobs, sessions" in done.stdout
    assert "No migrations to apply." in done.stdout and "imported: []" in done.stdout, done.stdout


def test_a_migration_file_not_yet_recorded_sends_migrate_the_whole_way(db):
    from django.db.migrations.recorder import MigrationRecorder

    from jobs.management.commands import migrate

    recorded = MigrationRecorder.Migration.objects
    assert migrate._all_applied("default")
    newest = recorded.filter(app="jobs").order_by("-name").first()
    newest.delete()  # as a newly pulled migration file looks: on disk, not in django_migrations
    assert not migrate._all_applied("default")
    assert "jobs" in migrate._migration_files() and newest.name in migrate._migration_files()["jobs"]
