"""The `benchweb` command: run (and wait, gate, report), import, results, export. Exit status 0 pass, 1 a gate
failed, 2 could not run (a run failed or was cancelled, benchweb unreachable, a refusal), 130 after Ctrl-C."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from benchweb_client import __version__, config, gates, reports, waiting
from benchweb_client.api import Api
from benchweb_client.contract import IDEMPOTENCY, REPLAYED
from benchweb_client.errors import ClientError
from benchweb_client.outcome import Outcome, could_not_run, exit_status

INTERRUPTED = 128 + signal.SIGINT
# Runs one list request names (the server's most, and its largest page).
LIST_IDS = 200
(KEY_HEADER,), (REPLAYED_HEADER,) = IDEMPOTENCY, REPLAYED
# CI systems' ids of this pipeline job: a retry of the same job gets the same key, so it starts nothing new.
CI_KEYS = (("GITHUB_RUN_ID", "GITHUB_JOB"), ("CI_PIPELINE_ID", "CI_JOB_NAME"))


class Context:
    def __init__(self, url: str | None, token: str | None, config_path: str | None) -> None:
        self._given = (url, token, config_path)
        self._api: Api | None = None

    @property
    def api(self) -> Api:
        if self._api is None:
            self._api = Api(config.load(*self._given))
        return self._api


def main() -> None:
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except ClientError as exc:
        click.echo(f"benchweb: {exc}", err=True)
        sys.exit(exc.status)


@click.group()
@click.version_option(__version__, prog_name="benchweb-client")
@click.option("--url", help="benchweb's address (default: $BENCHWEB_URL, then the config file).")
@click.option("--token", help="An API token (default: $BENCHWEB_TOKEN, then the config file); visible in ps.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help=f"A TOML file with url and token (default: {config.default_path()}).")  # fmt: skip
@click.pass_context
def cli(ctx: click.Context, url: str | None, token: str | None, config_path: str | None) -> None:
    """benchweb's command-line client: start runs, wait, gate a pipeline on the results, report."""
    ctx.obj = Context(url, token, config_path)


# --- choosing disks and profiles ------------------------------------------------------------------------------


def _disks(api: Api, chosen: tuple[str, ...], labels: tuple[str, ...], hosts: tuple[str, ...]) -> list[dict[str, Any]]:
    """The disks named by id, label or host:label, plus those matching every --label / --host pattern given."""
    everything = api.every("disks")
    host_names = {h["id"]: h["name"] for h in api.every("hosts")}
    for disk in everything:
        disk["host_name"] = host_names.get(disk["host"], str(disk["host"]))
    found: dict[int, dict[str, Any]] = {}
    for text in chosen:
        matches = [d for d in everything if text in (str(d["id"]), d["label"], f"{d['host_name']}:{d['label']}")]
        if not matches:
            raise ClientError(f"no disk {text!r} in this team: give its id, label or host:label (benchweb disks)")
        if len(matches) > 1:
            names = ", ".join(f"{d['host_name']}:{d['label']} (id {d['id']})" for d in matches)
            raise ClientError(f"--disk {text} names {len(matches)} disks ({names}): give host:label or the id")
        found[matches[0]["id"]] = matches[0]
    if labels or hosts:
        filtered = [
            d for d in everything
            if (not labels or any(fnmatch.fnmatchcase(d["label"], p) for p in labels))
            and (not hosts or any(fnmatch.fnmatchcase(d["host_name"], p) or p == str(d["host"]) for p in hosts))
        ]  # fmt: skip
        if not filtered:
            raise ClientError(f"no disk matches --label {' '.join(labels) or '*'} --host {' '.join(hosts) or '*'}")
        found |= {d["id"]: d for d in filtered}
    if not found:
        raise ClientError("no disk chosen: give --disk ID|LABEL|HOST:LABEL, or --label / --host patterns")
    return list(found.values())


def _profile(api: Api, text: str) -> dict[str, Any]:
    profiles = api.every("profiles")
    matches = [p for p in profiles if text in (str(p["id"]), p["name"])]
    if len(matches) != 1:
        near = [p["name"] for p in profiles if text.lower() in p["name"].lower()][:5]
        hint = f" (did you mean: {'; '.join(near)})" if near else ""
        raise ClientError(f"no profile {text!r}{hint}: give its id or exact name (benchweb profiles)")
    return matches[0]


def _name(disk: dict[str, Any]) -> str:
    return f"{disk['host_name']}:{disk['label']}"


def idempotency_key(given: str | None) -> str | None:
    if given:
        return given
    for run_id, job in CI_KEYS:
        if os.environ.get(run_id) and os.environ.get(job):
            return f"{os.environ[run_id]}-{os.environ[job]}"
    return None


# --- run -----------------------------------------------------------------------------------------------------


@cli.command()
@click.option("--profile", "profile_text", required=True, help="The profile's id or exact name.")
@click.option("--disk", "disk_texts", multiple=True, help="A disk's id, label or host:label; repeat for several.")
@click.option("--label", "labels", multiple=True, help="Every disk whose label matches (glob: 'data-*').")
@click.option("--host", "hosts", multiple=True, help="Every disk of hosts whose name matches (glob) or id.")
@click.option("--group", is_flag=True, help="Run the disks as one synchronised group (one set, started at once).")
@click.option("--idempotency-key", "key", help="Retries with the same key start nothing new (default: from CI).")
@click.option("--wait", "wait_", is_flag=True, help="Wait for the runs, with a progress line on stderr.")
@click.option("--gate", "gate_texts", multiple=True, help="A condition to pass: promise:10, baseline, steady, "
              "fresh-blocks, client-bound, p99<=2ms; repeat for several. Implies --wait.")  # fmt: skip
@click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report. Implies --wait.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary. Implies --wait.")
@click.option("--json", "json_to", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the outcome as JSON ('-': stdout).")  # fmt: skip
@click.option("--poll", "poll_s", default=1.0, show_default=True, help="Seconds between polls.")
@click.option("--progress-every", default=10.0, show_default=True,
              help="Seconds between progress lines when stderr is not a terminal.")  # fmt: skip
@click.option("--cancel-timeout", default=120.0, show_default=True,
              help="After Ctrl-C, seconds to wait for the cancelled runs to stop.")  # fmt: skip
@click.option("--patience", "patience_s", default=300.0, show_default=True,
              help="While waiting, seconds benchweb may be unreachable (a restart) before giving up.")  # fmt: skip
@click.pass_obj
def run(
    ctx: Context, profile_text: str, disk_texts: tuple[str, ...], labels: tuple[str, ...], hosts: tuple[str, ...],
    group: bool, key: str | None, wait_: bool, gate_texts: tuple[str, ...], junit: str | None, markdown: str | None,
    json_to: str | None, poll_s: float, progress_every: float, cancel_timeout: float, patience_s: float,
) -> None:  # fmt: skip
    """Run a profile on disks (one run a disk; a sweep profile: one sweep a disk; --group: one group)."""
    try:
        chosen_gates = [gates.parse(text) for text in gate_texts]
    except gates.GateError as exc:
        raise ClientError(str(exc)) from exc
    api = ctx.api
    started = time.monotonic()
    profile = _profile(api, profile_text)
    disks = _disks(api, disk_texts, labels, hosts)
    base_key = idempotency_key(key)
    is_set = bool(profile.get("sweep_plan") or profile.get("sla_target_us"))
    if is_set and chosen_gates:
        raise ClientError("gates judge single runs and groups; a sweep is judged on its page (leave out --gate)")
    title = f"{profile['name']} on {len(disks)} disk{'s' * (len(disks) != 1)}"
    names: dict[int, str] = {}
    runs: dict[int, dict[str, Any]] = {}
    set_of: dict[int, int] = {}  # a member run's id -> its set's, cancelled as a whole
    board = waiting.Board(sys.stderr, sys.stderr.isatty(), progress_every)
    fetch = lambda run_id: api.json_patiently("run", patience_s, board.say, ids={"id": run_id})  # noqa: E731

    def fetch_going(ids: list[int]) -> dict[int, dict[str, Any]]:
        found: dict[int, dict[str, Any]] = {}
        for at in range(0, len(ids), LIST_IDS):
            asked = [("id", i) for i in ids[at : at + LIST_IDS]] + [("page_size", LIST_IDS)]
            answer = api.json_patiently("runs", patience_s, board.say, params=asked)
            found |= {row["id"]: row for row in answer["results"]}
        return found

    stopped_by = _stop_on_signals()
    waits = bool(wait_ or chosen_gates or junit or markdown)
    try:
        try:
            if group or is_set:
                _start_sets(api, profile, disks, group, base_key, names, runs, set_of)
            else:
                _start_runs(api, profile, disks, base_key, names, runs)
        except ClientError as exc:
            # A refusal after some runs started: those are not left running for a trigger that failed.
            if runs:
                _cancel_all(api, runs, names, set_of, fetch_going, board, cancel_timeout, "a disk was refused")
                said = "the run already started was" if len(runs) == 1 else f"the {len(runs)} runs already started were"
                raise ClientError(f"{exc} ({said} cancelled)") from exc
            raise
        if waits:
            waiting.wait(runs, names, fetch, fetch_going, board, poll_s)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C leaves at once
        by = "SIGTERM" if stopped_by and stopped_by[-1] == signal.SIGTERM else "Ctrl-C"
        _cancel_all(api, runs, names, set_of, fetch_going, board, cancel_timeout, by)
        sys.exit(128 + (stopped_by[-1] if stopped_by else signal.SIGINT))
    if not waits:
        if json_to:
            started_runs = [{"id": i, "disk": names[i], "url": api.page_url(i)} for i in runs]
            _write(json_to, json.dumps({"runs": started_runs}, indent=2) + "\n")
        return
    outcomes = [_judge(api, run_, names[i], chosen_gates) for i, run_ in runs.items()]
    for outcome in outcomes:
        # With the JSON report on stdout, the lines go to stderr, so that stdout is JSON only.
        click.echo(outcome.line(), err=json_to == "-")
    seconds = time.monotonic() - started
    if junit:
        _write(junit, reports.junit(outcomes, seconds, title))
    if markdown:
        _write(markdown, reports.markdown(outcomes, title))
    if json_to:
        _write(json_to, reports.json_text(outcomes, title))
    sys.exit(exit_status(outcomes))


def _start_runs(
    api: Api,
    profile: dict[str, Any],
    disks: list[dict[str, Any]],
    key: str | None,
    names: dict[int, str],
    runs: dict[int, dict[str, Any]],
) -> None:
    """One run a disk, each added to `runs` as soon as benchweb made it (so an interrupt knows what to cancel)."""
    for disk in disks:
        headers = {KEY_HEADER: f"{key}:profile-{profile['id']}:disk-{disk['id']}"} if key else None
        try:
            answer = api.call("run_create", body={"disk": disk["id"], "profile": profile["id"]}, headers=headers)
        except ClientError as exc:
            raise ClientError(f"disk {_name(disk)}: {exc}", exc.status) from exc
        made = answer.json()
        names[made["id"]] = _name(disk)
        runs[made["id"]] = made
        said = "already started by this key" if answer.headers.get(REPLAYED_HEADER) == "true" else "started"
        click.echo(f"disk {_name(disk)}: run {made['id']} {said}: {api.page_url(made['id'])}", err=True)


def _cancel_all(
    api: Api,
    runs: dict[int, dict[str, Any]],
    names: dict[int, str],
    set_of: dict[int, int],
    fetch_going: waiting.FetchGoing,
    board: waiting.Board,
    timeout_s: float,
    why: str,
) -> None:
    cancelled_sets: set[int] = set()

    def cancel(run_id: int) -> None:
        # A set is cancelled whole, so that a sweep's next point does not start after its running one ends.
        if run_id not in set_of:
            api.call("run_cancel", ids={"id": run_id}, ok=(200, 400))
        elif set_of[run_id] not in cancelled_sets:
            cancelled_sets.add(set_of[run_id])
            api.call("set_cancel", ids={"id": set_of[run_id]}, ok=(200, 400))

    for line in waiting.cancel_all(runs, names, cancel, fetch_going, board, timeout_s, why):
        board.say(f"benchweb: cancelled {line}")


def _stop_on_signals() -> list[int]:
    """Ctrl-C, and the SIGTERM a CI system sends when a job is cancelled, both stop the wait (as KeyboardInterrupt)
    so the runs are cancelled rather than left running. Installed even where the shell that started the client
    ignores SIGINT (a background job), since the client's promise is that it cancels. Returns the signals seen."""
    seen: list[int] = []

    def stop(signum: int, frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    return seen


def _start_sets(
    api: Api,
    profile: dict[str, Any],
    disks: list[dict[str, Any]],
    group: bool,
    key: str | None,
    names: dict[int, str],
    runs: dict[int, dict[str, Any]],
    set_of: dict[int, int],
) -> None:
    """Start the group (or one sweep a disk); its member runs go into `runs`: what the client waits for and judges."""
    bodies = [{"disks": [d["id"] for d in disks], "profile": profile["id"]}] if group else \
             [{"disk": d["id"], "profile": profile["id"]} for d in disks]  # fmt: skip
    by_id = {d["id"]: d for d in disks}
    for body in bodies:
        suffix = "group" if group else f"disk-{body['disk']}"
        headers = {KEY_HEADER: f"{key}:profile-{profile['id']}:{suffix}"} if key else None
        made = api.json("set_create", body=body, headers=headers)
        click.echo(f"set {made['id']} started: {api.config.url}/sets/{made['id']}/", err=True)
        for member in made["members"]:
            names[member["id"]] = _name(by_id[member["disk"]])
            set_of[member["id"]] = made["id"]
            runs[member["id"]] = {"id": member["id"], "state": member["state"], "final": False}


def _judge(api: Api, run_: dict[str, Any], name: str, chosen: list[gates.Gate]) -> Outcome:
    outcome = Outcome(name, int(run_["disk"]), run_, api.page_url(run_["id"]))
    if run_["state"] != "succeeded":
        outcome.error = could_not_run(run_)
        outcome.checks = [gates.Check(g.text, "error", outcome.error) for g in chosen]
        return outcome
    for gate in chosen:
        compared = _baseline(api, run_) if gate.kind == "baseline" else None
        outcome.checks.append(gates.check(gate, run_, compared))
    return outcome


def _baseline(api: Api, run_: dict[str, Any]) -> dict[str, Any]:
    """The product's statistical compare (GET /api/v1/compare/stats/) of the disk's latest runs of this profile,
    this one among them, against the runs before them. The test needs gates.BASELINE_RUNS runs a side, so the split
    is where the latest that many runs begin: a single new run alone could never be judged."""
    latest = api.json("runs", params={"disk": run_["disk"], "profile": run_["profile"], "state": "succeeded",
                                      "page_size": gates.BASELINE_RUNS})["results"]  # fmt: skip
    split = min([r["finished_at"] for r in latest if r.get("finished_at")] + [run_["finished_at"]])
    params = {"disk": run_["disk"], "split": split, "profile": run_["profile_name"], "metric": "iops"}
    try:
        return dict(api.json("compare", params=params))
    except ClientError as exc:
        return {"verdict": "not_enough", "text": str(exc)}


def _write(path: str, text: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
    else:
        Path(path).write_text(text)


# --- disks, import, results, export ----------------------------------------------------------------------------


@cli.command()
@click.option("--label", "labels", multiple=True, help="Only disks whose label matches (glob).")
@click.option("--host", "hosts", multiple=True, help="Only disks of hosts whose name matches (glob) or id.")
@click.option("--json", "as_json", is_flag=True, help="JSON: id, name (host:label), target_path.")
@click.pass_obj
def disks(ctx: Context, labels: tuple[str, ...], hosts: tuple[str, ...], as_json: bool) -> None:
    """The team's disks, as --disk takes them: id and host:label."""
    found = _disks(ctx.api, (), labels or ("*",), hosts)
    rows = [{"id": d["id"], "name": _name(d), "target_path": d["target_path"]} for d in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(f"{row['id']:>6}  {row['name']:<32} {row['target_path']}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="JSON: id, name, kind (run, sweep or latency target).")
@click.pass_obj
def profiles(ctx: Context, as_json: bool) -> None:
    """The team's profiles, as --profile takes them: id and exact name."""
    rows = [
        {"id": p["id"], "name": p["name"],
         "kind": "sweep" if p.get("sweep_plan") else "latency target" if p.get("sla_target_us") else "run"}
        for p in ctx.api.every("profiles")
    ]  # fmt: skip
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        kind = "" if row["kind"] == "run" else f"  ({row['kind']}: one set a disk)"
        click.echo(f"{row['id']:>6}  {row['name']}{kind}")


@cli.command(name="import")
@click.argument("source", type=click.File("r"))
@click.option("--disk", "disk_text", required=True, help="The disk the output was measured on (id or label).")
@click.option("--tool", type=click.Choice(["auto", "fio", "ndisk64"]), default="auto", show_default=True)
@click.option("--name", help="What to call the output (default: the file's name).")
@click.option("--finished-at", help="When the run ended, ISO 8601 (default: now).")
@click.option("--dry-run", is_flag=True, help="Show the parsed numbers; store nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print benchweb's answer as JSON.")
@click.pass_obj
def import_(ctx: Context, source: io.TextIOWrapper, disk_text: str, tool: str, name: str | None,
            finished_at: str | None, dry_run: bool, as_json: bool) -> None:  # fmt: skip
    """Import fio or ndisk64 output from FILE, or '-' for stdin."""
    api = ctx.api
    disk = _disks(api, (disk_text,), (), ())[0]
    given = name or ("stdin" if source.name == "<stdin>" else Path(source.name).name)
    body: dict[str, Any] = {"disk": disk["id"], "tool": tool, "text": source.read(), "dry_run": dry_run, "name": given}
    if finished_at:
        body["finished_at"] = finished_at
    answer = api.call("import", body=body, ok=(200, 201, 409))
    found = answer.json()
    if as_json:
        click.echo(json.dumps(found, indent=2))
    if answer.status_code == 409:
        raise ClientError(f"already imported: {found.get('detail')} (run {found.get('duplicate_of')})")
    if as_json:
        return
    for parsed in found["parsed"]:
        total = ((parsed.get("summary") or {}).get("total") or {}).get("iops")
        label = f" [{parsed['label']}]" if parsed.get("label") else ""
        iops = f"{gates.iops_text(total)} IOPS" if total is not None else "no IOPS"
        click.echo(f"{parsed['name']}{label}: {iops}")
    if dry_run:
        click.echo("dry run: nothing stored")
    for made in found["runs"]:
        click.echo(f"stored as run {made['id']}: {api.page_url(made['id'])}")


@cli.command()
@click.option("--disk", "disk_texts", multiple=True, help="A disk's id, label or host:label; repeat for several.")
@click.option("--since", help="Runs finished at or after this ISO date or date-time.")
@click.option("--until", help="Runs finished before this ISO date or date-time.")
@click.option("--profile", "profile_text", help="Only this profile's runs (id or name).")
@click.option("--state", "states", multiple=True, default=("succeeded",), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="JSON rows (the CSV export's columns) instead of a table.")
@click.pass_obj
def results(ctx: Context, disk_texts: tuple[str, ...], since: str | None, until: str | None,
            profile_text: str | None, states: tuple[str, ...], as_json: bool) -> None:  # fmt: skip
    """The team's results, newest first: IOPS, p99 and the promise per run."""
    api = ctx.api
    rows: list[dict[str, str]] = []
    disks = _disks(api, disk_texts, (), ()) if disk_texts else [None]
    profile = _profile(api, profile_text) if profile_text else None
    for disk in disks:
        params = _filters(disk, profile, states, since, until)
        rows += list(csv.DictReader(io.StringIO(api.call("runs_csv", params=params).text)))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'run':>6}  {'state':<10} {'finished (UTC)':<20} {'disk':<24} {'IOPS':>12} {'p99 read':>10}  profile")
    for row in rows:
        p99 = row.get("read_p99_us") or row.get("write_p99_us")
        iops = f"{float(row['total_iops']):,.0f}" if row.get("total_iops") else "—"
        click.echo(f"{row['run_id']:>6}  {row['state']:<10} {row['finished_at_utc'][:19]:<20} "
                   f"{(row['host'] + ':' + row['disk'])[:24]:<24} {iops:>12} "
                   f"{gates.latency_text(float(p99)) if p99 else '—':>10}  {row['profile']}")  # fmt: skip


def _filters(disk: dict[str, Any] | None, profile: dict[str, Any] | None, states: tuple[str, ...],
             since: str | None, until: str | None) -> list[tuple[str, str | int]]:  # fmt: skip
    params: list[tuple[str, str | int]] = [("format", "csv"), *[("state", s) for s in states]]
    if disk:
        params.append(("disk", disk["id"]))
    if profile:
        params.append(("profile", profile["id"]))
    if since:
        params.append(("finished_after", _moment(since)))
    if until:
        params.append(("finished_before", _moment(until)))
    return params


def _moment(text: str) -> str:
    return f"{text}T00:00:00Z" if len(text) == 10 else text


@cli.command()
@click.argument("what", type=click.Choice(["runs", "samples", "points"]))
@click.option("--id", "object_id", type=int, help="samples: the run's id; points: the set's id.")
@click.option("--disk", "disk_texts", multiple=True, help="runs: a disk's id, label or host:label.")
@click.option("--since", help="runs: finished at or after this ISO date or date-time.")
@click.option("--until", help="runs: finished before this ISO date or date-time.")
@click.option("--state", "states", multiple=True, help="runs: only runs in this state; repeat for several.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-", show_default=True)
@click.pass_obj
def export(ctx: Context, what: str, object_id: int | None, disk_texts: tuple[str, ...], since: str | None,
           until: str | None, states: tuple[str, ...], output: str) -> None:  # fmt: skip
    """CSV exports: every run the filters select (runs), a run's per-second samples, a sweep's or group's points."""
    api = ctx.api
    if what == "runs":
        disks = _disks(api, disk_texts, (), ()) if disk_texts else [None]
        parts = [api.call("runs_csv", params=_filters(d, None, states, since, until)).text for d in disks]
        # One header for several disks' files.
        text = parts[0] + "".join(part.split("\n", 1)[1] if "\n" in part else "" for part in parts[1:])
    else:
        if object_id is None:
            raise ClientError(f"export {what} needs --id (the {'run' if what == 'samples' else 'set'}'s id)")
        text = api.call(f"{what}_csv", ids={"id": object_id}).text
    _write(output, text)
