"""Every environment variable benchweb reads is documented in .env.example."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
READS = re.compile(
    r"""(?:environ\.get|environ\[|env_bool|env_list|getenv)\(?\s*["']((?:BENCHWEB|DJANGO|DATABASE|REDIS)[A-Z0-9_]*)["']"""
)
# Set by the test harness or by benchweb for its own children, never by a person.
INTERNAL = {"DJANGO_SETTINGS_MODULE", "BENCHWEB_TEST_DATABASE_URL", "BENCHWEB_VENV", "BENCHWEB_PREPARE_STACK"}


def test_every_variable_read_by_the_product_is_in_env_example():
    documented = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    read = set()
    for folder in ("benchweb", "jobs", "audit"):
        for path in (ROOT / folder).rglob("*.py"):
            read |= set(READS.findall(path.read_text()))
    assert read, "the pattern found no variables at all"
    assert read - INTERNAL - documented == set()
