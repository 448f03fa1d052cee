"""The files benchweb creates in a directory target, and the only ones its cleanup removes (pure)."""

from __future__ import annotations

import re
import uuid

TEST_FILE_PREFIX = "benchweb-"
_OWNED_NAME = re.compile(r"benchweb-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.[0-9]+)*")


def test_file_name(run_uuid: str) -> str:
    """The prefix of every file benchweb creates in a directory target, e.g. benchweb-<uuid>.0.0."""
    return TEST_FILE_PREFIX + str(uuid.UUID(str(run_uuid)))


# pytest would otherwise collect it wherever a test module imports it by name.
test_file_name.__test__ = False  # type: ignore[attr-defined]


def is_owned_test_file(name: str) -> bool:
    """Cleanup removes only names test_file_name made, optionally with fio's .<job>.<file> suffixes."""
    return bool(_OWNED_NAME.fullmatch(name))
