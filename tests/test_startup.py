"""A start-up carries what it needs, not every library a page may one day call (issue 29, item 10): the web
server, the worker, beat and every manage.py command start Django and import the models, the tasks and the URLs;
numpy, scipy, ruptures and Apprise are imported where they are used (bench/startup.py measures the time and
memory this saves)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
