from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    shutil.which("docker-compose") is None and os.environ.get("CI") != "true",
    reason="Debian's docker-compose is not installed here (.ci/run installs it); no Docker engine is needed",
)
def test_the_compose_file_is_valid_and_has_exactly_one_beat():
    env = dict(os.environ, POSTGRES_PASSWORD="x", DJANGO_SECRET_KEY="y", BENCHWEB_FIELD_KEYS="z")
    result = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config"], cwd=ROOT, env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for service in ("postgres:", "redis:", "web:", "worker:", "beat:"):
        assert f"  {service}" in result.stdout
    assert "replicas: 1" in result.stdout
