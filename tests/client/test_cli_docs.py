"""The client's guide (docs/user-guide/cli.md) stays true to the client: every `benchweb` command it shows, in its
shell examples and inside its CI recipes, is one the client's own parser takes, and the recipes are YAML."""

from __future__ import annotations

import re
import shlex

import click
import pytest
import yaml
from benchweb_client.cli import cli

from tests.stacks import ROOT

GUIDE = ROOT / "docs/user-guide/cli.md"
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(GUIDE.read_text()) if lang == language]


def _commands(text: str) -> list[str]:
    """Each `benchweb ...` command in shell text (continuations joined), up to a pipe or redirection."""
    joined = text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        at = line.find("benchweb ")
        # An installed path (/opt/…/bin/benchweb: the cron line, the systemd unit) is read by the next function.
        if at < 0 or line.lstrip().startswith("#") or "pip install" in line or "/bin/benchweb" in line:
            continue
        found.append(re.split(r"\s(?:\||>>|2>&1|&&|;)\s?", line[at:])[0])
    return found


def _recipe_commands() -> list[str]:
    found = []
    for body in _blocks("yaml"):
        recipe = yaml.safe_load(body)
        for job in recipe.get("jobs", {}).values() if "jobs" in recipe else recipe.values():
            lines = [step.get("run", "") for step in job.get("steps", [])] + job.get("script", [])
            found += [c for line in lines for c in _commands(line.replace("\n", " "))]
    return found


def _ini_and_cron_commands() -> list[str]:
    found = []
    for body in _blocks("ini") + _blocks("sh"):
        for line in body.splitlines():
            if "/bin/benchweb run" in line:
                command = line[line.index("/bin/benchweb run") + len("/bin/") :]
                found.append(re.split(r"'|\s>>", command)[0].replace("%%", "%").replace("\\%", "%"))
    return found


def _parse(command: str) -> None:
    """As the client parses the command line, short of running it: the global options, then the command's own."""
    args = shlex.split(command, comments=True)[1:]
    at = next((i for i, arg in enumerate(args) if arg in cli.commands), None)
    if at is None:
        cli.make_context("benchweb", args)  # --version: exits
        return
    parent = cli.make_context("benchweb", args[: at + 1])
    cli.commands[args[at]].make_context(args[at], args[at + 1 :], parent=parent)


def test_the_guide_shows_every_command_and_the_recipes_run_the_client():
    shell = [c for body in _blocks("sh") for c in _commands(body)]
    commands = {c.split()[1] for c in shell}
    assert {"run", "disks", "profiles", "import", "results", "export"} <= commands, commands
    assert len(_recipe_commands()) == 2, "the GitHub and GitLab recipes"
    assert len(_ini_and_cron_commands()) == 2, "the cron line and the systemd service"


@pytest.mark.parametrize(
    "command",
    [c for body in _blocks("sh") for c in _commands(body)] + _recipe_commands() + _ini_and_cron_commands(),
)
def test_each_command_in_the_guide_is_one_the_client_takes(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fio-output.json").write_text("{}")  # `import` opens its file as it parses
    try:
        _parse(command)
    except click.exceptions.Exit:  # --version, --help
        pass
    except click.ClickException as exc:
        pytest.fail(f"{command}: {exc.format_message()}")
