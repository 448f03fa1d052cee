from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

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
    for service in ("postgres:", "redis:", "web:", "worker:", "beat:", "target:"):
        assert f"  {service}" in result.stdout
    assert "replicas: 1" in result.stdout
    config = yaml.safe_load(result.stdout)
    services = config["services"]
    # Every service restarts and says whether it is healthy (web through the image's HEALTHCHECK).
    for name, service in services.items():
        assert service.get("restart") == "unless-stopped", name
    for name in ("postgres", "redis", "worker", "beat"):
        assert services[name]["healthcheck"]["test"], name
    assert "HEALTHCHECK" in (ROOT / "Dockerfile").read_text()
    assert "HEALTHCHECK" in (ROOT / "docker/target/Dockerfile").read_text()
    # The demo: web registers the target after migrating, its keys shared read-only through a named volume.
    web = services["web"]
    assert web["depends_on"]["target"]["condition"] == "service_healthy"
    command = " ".join(web["command"])
    assert command.index("migrate") < command.index("demo_target --name target --address target")
    assert {"demokeys", "pgdata", "redisdata"} <= set(config["volumes"])


def test_every_variable_the_compose_file_reads_is_documented_in_env_example():
    compose = (ROOT / "docker-compose.yml").read_text()
    documented = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)", compose))
    assert used - documented == set()
