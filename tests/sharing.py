"""Which tests the sessions of `./bw test` share, and claiming one (tests/conftest.py's run loop; the bench smoke
runs, which start in the background before their tests come)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

# A test that asks for none of these (and has no django_db mark) cannot touch a database: pytest-django refuses it.
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


def shared(item: pytest.Item) -> bool:
    """A slow test, or one that uses no database, runs in one session."""
    if item.get_closest_marker("slow"):
        return True
    uses_database = item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    return not uses_database


def claims_dir() -> Path | None:
    """BENCHWEB_TEST_CLAIMS, the directory the sessions claim shared tests in; None outside `./bw test`."""
    claims = os.environ.get("BENCHWEB_TEST_CLAIMS")
    return Path(claims) if claims else None


def claim(item: pytest.Item) -> bool:
    """Whether this session runs `item`: not shared, no claims to make, or claimed by this session, now (a file made
    with O_EXCL, holding this process's id) or before."""
    claimed = claims_dir()
    if claimed is None or not shared(item):
        return True
    path = claimed / hashlib.sha256(item.nodeid.encode()).hexdigest()
    mine = str(os.getpid())
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return path.read_text() == mine
    with os.fdopen(descriptor, "w") as file:
        file.write(mine)
    return True
