"""The command-line client (`benchweb`, clients/python) run as a pipeline runs it, against the product's own `./bw run`
stack (gunicorn, Celery worker and beat, embedded Redis) with a real OpenSSH server and real fio as the benchmarked
host. One stack serves the module: it is the slow part. The stack keeps its own SQLite database in its var dir
(not the test database), so nothing the tests' flushes do reaches it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import xmlschema
from markdown import markdown

from tests.stacks import ROOT, Stack, final, free_port, running_stack, sign_up

pytestmark = [pytest.mark.slow]

CLIENT = Path(sys.executable).with_name("benchweb")
JUNIT_XSD = Path(__file__).with_name("junit.xsd")
# A CI system's job ids make the client send an idempotency key of its own (cli.CI_KEYS): left out, so that each
# test's trigger is its own.
CI_VARIABLES = {"GITHUB_RUN_ID", "GITHUB_JOB", "CI_PIPELINE_ID", "CI_JOB_NAME"}


@dataclass
class Bench:
    stack: Stack
    client_env: dict[str, str]
    host: dict[str, Any]
    quick: dict[str, Any]  # a 2 s randread
    slow: dict[str, Any]  # a 60 s one, to be interrupted
    scratch: Path

    def disk(self, label: str, **spec: Any) -> dict[str, Any]:
        """A directory disk on the loopback host, its directory made."""
        (self.scratch / label).mkdir(parents=True)
        return self.stack.call("POST", "/api/v1/disks/", 201, host=self.host["id"], label=label, disk_type="custom",
                               target_path=str(self.scratch / label), **spec)  # fmt: skip

    def client(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLIENT), *args], env=env or self.client_env, capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def bench(sshd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    assert CLIENT.exists(), f"{CLIENT} is missing: ./bw installs the client (pip install -e clients/python)"
    tmp = tmp_path_factory.mktemp("client")
    var_dir, port = tmp / "var", free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}} | {
        "BENCHWEB_VAR_DIR": str(var_dir), "BENCHWEB_PORT": str(port), "BENCHWEB_WEB_WORKERS": "1",
        "BENCHWEB_DEMO_TARGET": "0", "BENCHWEB_PUBLIC_URL": url,
    }  # fmt: skip
    # ./bw test's migrated template as the stack's database: its migrate then has nothing to do (half this module's
    # time otherwise). A fresh database's start is tests/stack's subject, not this one's.
    template = Path(os.environ.get("BENCHWEB_TEST_TEMPLATE_SQLITE") or "/nonexistent")
    if template.is_file():
        var_dir.mkdir()
        shutil.copyfile(template, var_dir / "benchweb.sqlite3")
    with running_stack(var_dir, env):
        stack = Stack(url, env, requests.Session(), sign_up(url, "olga", "a-long-test-password-1"))
        token = stack.manage("create_api_token", "olga", "--name", "pipeline").strip()
        stack.api.headers["Authorization"] = f"Bearer {token}"
        host = stack.call("POST", "/api/v1/hosts/", 201, name="loopback", address=sshd.address, port=sshd.port,
                          username=sshd.username, private_key=sshd.private_key)  # fmt: skip
        scanned = stack.call("POST", f"/api/v1/hosts/{host['id']}/scan-key/")
        stack.call("POST", f"/api/v1/hosts/{host['id']}/approve-key/", fingerprint=scanned["fingerprint"])

        def profile(name: str, runtime_s: int) -> dict[str, Any]:
            return stack.call("POST", "/api/v1/profiles/", 201, name=name, tool="fio", rw="randread",
                              block_size_bytes=4096, iodepth=1, jobs=1, runtime_s=runtime_s, time_based=True,
                              ioengine="psync", direct=False, size_bytes=8 * 2**20)  # fmt: skip

        client_env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES} | {
            "BENCHWEB_URL": url, "BENCHWEB_TOKEN": token, "XDG_CONFIG_HOME": str(tmp / "config"),
        }  # fmt: skip
        yield Bench(stack, client_env, host, profile("ci 2 s", 2), profile("ci 60 s", 60), tmp / "targets")


def test_a_run_that_passes_its_gates_exits_0_and_writes_junit_and_markdown(bench, tmp_path):
    bench.disk("fast", spec_iops=10)
    junit, summary, outcome = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "outcome.json"

    done = bench.client("run", "--profile", "ci 2 s", "--disk", "fast", "--gate", "promise:10", "--gate", "p99<=10s",
                        "--gate", "baseline", "--junit", str(junit), "--markdown", str(summary), "--json",
                        str(outcome), "--progress-every", "1")  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    line = done.stdout.strip()
    assert line.startswith("disk loopback:fast: PASS promise:10: ") and "above the promise of 10 IOPS" in line, line
    run_id = json.loads(outcome.read_text())["disks"][0]["run"]["id"]
    assert bench.stack.call("GET", f"/api/v1/runs/{run_id}/")["state"] == "succeeded"
    # Not a terminal: progress lines, one a second at most, the last the run's end.
    assert f"disk loopback:fast: run {run_id} succeeded" in done.stderr.splitlines()[-1]

    xmlschema.XMLSchema(JUNIT_XSD).validate(junit)
    report = junit.read_text()
    assert 'tests="3" failures="0" errors="0" skipped="1"' in report  # baseline: not enough runs to tell
    assert report.count('classname="benchweb.loopback:fast"') == 3 and 'name="p99&lt;=10s"' in report

    html = markdown(summary.read_text(), extensions=["tables"])
    assert f'<a href="{bench.stack.url}/runs/{run_id}/">run\u00a0{run_id}</a>' in html
    assert "<td>PASS</td>" in html and "Not enough runs to tell" in html
    assert bench.client_env["BENCHWEB_TOKEN"] not in done.stdout + done.stderr + report + summary.read_text()


def test_a_promise_the_disk_cannot_meet_exits_1_naming_the_disk_and_the_figure(bench, tmp_path):
    bench.disk("promised", spec_iops=50_000_000)
    junit = tmp_path / "junit.xml"

    done = bench.client(
        "run", "--profile", "ci 2 s", "--disk", "promised", "--gate", "promise:10", "--junit", str(junit)
    )

    assert done.returncode == 1, done.stdout + done.stderr
    line = done.stdout.strip()
    assert line.startswith("disk loopback:promised: FAIL promise:10: "), line
    assert "below the promise of 50,000,000 IOPS (allowed 10 % below)" in line, line
    xmlschema.XMLSchema(JUNIT_XSD).validate(junit)
    assert 'failures="1"' in junit.read_text() and "below the promise of 50,000,000 IOPS" in junit.read_text()


def test_an_unreachable_host_exits_2_with_the_products_reason(bench, sshd, tmp_path):
    # A host as it was set up (its key approved), whose sshd is gone: nothing listens on its port now.
    dead = free_port()
    host = bench.stack.call("POST", "/api/v1/hosts/", 201, name="gone", address=sshd.address, port=sshd.port,
                            username=sshd.username, private_key=sshd.private_key)  # fmt: skip
    scanned = bench.stack.call("POST", f"/api/v1/hosts/{host['id']}/scan-key/")
    bench.stack.call("POST", f"/api/v1/hosts/{host['id']}/approve-key/", fingerprint=scanned["fingerprint"])
    bench.stack.call("PATCH", f"/api/v1/hosts/{host['id']}/", port=dead)
    bench.stack.call("PATCH", f"/api/v1/disks/{bench.disk('stranded')['id']}/", host=host["id"])
    junit = tmp_path / "junit.xml"

    done = bench.client("run", "--profile", "ci 2 s", "--disk", "gone:stranded", "--gate", "promise", "--junit",
                        str(junit))  # fmt: skip

    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stdout.strip()
    assert line.startswith("disk gone:stranded: ERROR run ") and f"127.0.0.1:{dead}" in line, line
    xmlschema.XMLSchema(JUNIT_XSD).validate(junit)
    assert 'errors="1"' in junit.read_text() and 'type="could-not-run"' in junit.read_text()


def test_a_disk_refused_after_others_started_cancels_those_and_exits_2_naming_it(bench):
    started = bench.disk("first")
    bench.stack.call("POST", "/api/v1/disks/", 201, host=bench.host["id"], label="raw", kind="block",
                     target_path="/dev/benchweb-test-raw", disk_type="custom")  # fmt: skip
    bench.stack.call("POST", "/api/v1/profiles/", 201, name="ci write", tool="fio", rw="randwrite",
                     block_size_bytes=4096, iodepth=1, jobs=1, runtime_s=30, time_based=True, ioengine="psync",
                     direct=False, size_bytes=8 * 2**20)  # fmt: skip

    done = bench.client("run", "--profile", "ci write", "--disk", "first", "--disk", "raw", "--wait")

    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("benchweb: disk loopback:raw: POST /api/v1/runs/ refused (400): profile: "), last
    assert last.endswith("(the run already started was cancelled)"), last
    runs = bench.stack.call("GET", f"/api/v1/runs/?disk={started['id']}")["results"]
    assert [run["state"] for run in runs] == ["cancelled"], runs


def test_ctrl_c_while_waiting_cancels_the_runs_it_started(bench):
    disks = [bench.disk(label) for label in ("long-a", "long-b")]
    client = subprocess.Popen([str(CLIENT), "run", "--profile", "ci 60 s", "--disk", "long-a", "--disk", "long-b",
                               "--wait", "--progress-every", "0"], env=bench.client_env, stderr=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        seen: list[str] = []
        # Both running with fio's first IOPS in, so the cancel has to stop fio on the host.
        while sum("IOPS so far" in line for line in seen[-2:]) < 2:
            line = client.stderr.readline()  # type: ignore[union-attr]
            assert line, "".join(seen)
            seen.append(line)
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=90)
    finally:
        client.kill()

    assert client.returncode == 130, out + err
    for disk in disks:
        runs = bench.stack.call("GET", f"/api/v1/runs/?disk={disk['id']}")["results"]
        assert [run["state"] for run in runs] == ["cancelled"], runs
        assert f"benchweb: cancelled disk loopback:{disk['label']}: run {runs[0]['id']} cancelled" in err, err
    assert "Ctrl-C: cancelling 2 runs" in err


def test_a_repeated_trigger_with_the_same_key_starts_nothing_new(bench):
    disk = bench.disk("retried")
    trigger = ("run", "--profile", "ci 2 s", "--disk", "retried", "--json", "-")
    retried = bench.client_env | {"GITHUB_RUN_ID": "4711", "GITHUB_JOB": "storage-check"}

    first = bench.client(*trigger, env=retried)
    again = bench.client(*trigger, env=retried)
    other = bench.client(*trigger, "--idempotency-key", "another")
    # Another check in the same CI job (same job ids, another profile) is another request, not a key reused.
    second_check = bench.client("run", "--profile", bench.slow["name"], "--disk", "retried", "--json", "-", env=retried)

    for answer in (first, again, other, second_check):
        assert answer.returncode == 0, answer.stderr
    run = json.loads(first.stdout)["runs"][0]["id"]
    assert json.loads(again.stdout)["runs"][0]["id"] == run
    assert "already started by this key" in again.stderr
    assert json.loads(other.stdout)["runs"][0]["id"] != run
    slow = json.loads(second_check.stdout)["runs"][0]["id"]
    assert slow not in {run, json.loads(other.stdout)["runs"][0]["id"]}
    bench.stack.call("POST", f"/api/v1/runs/{slow}/cancel/")
    runs = bench.stack.call("GET", f"/api/v1/runs/?disk={disk['id']}")["results"]
    assert len(runs) == 3, runs
    for made in runs:
        final(bench.stack, made["id"])


def test_profiles_lists_what_profile_takes_and_a_wrong_name_points_there(bench):
    listed = bench.client("profiles", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["ci 2 s"] == {"id": bench.quick["id"], "name": "ci 2 s", "kind": "run"}

    wrong = bench.client("run", "--profile", "ci", "--disk", "1")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("benchweb: no profile 'ci' (did you mean: ci 2 s; ci 60 s"), wrong.stderr
    assert wrong.stderr.rstrip().endswith("): give its id or exact name (benchweb profiles)"), wrong.stderr


def test_a_bad_token_and_an_unreachable_server_say_what_to_fix(bench):
    wrong = bench.client("results", env=bench.client_env | {"BENCHWEB_TOKEN": "bw_not-a-real-token-0123456789"})
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("benchweb: benchweb refused the API token from BENCHWEB_TOKEN"), wrong.stderr
    assert "set BENCHWEB_TOKEN to a valid token" in wrong.stderr and "not-a-real-token" not in wrong.stderr

    nowhere = f"http://127.0.0.1:{free_port()}"
    gone = bench.client("results", env=bench.client_env | {"BENCHWEB_URL": nowhere})
    assert gone.returncode == 2
    assert f"cannot reach benchweb at {nowhere}" in gone.stderr and "BENCHWEB_URL" in gone.stderr, gone.stderr


def test_import_dry_run_stores_nothing_then_import_results_and_export_read_it_back(bench, tmp_path):
    disk = bench.disk("archive")
    output = ROOT / "tests/fixtures/fio-3.33-randread-jsonplus.json"

    dry = bench.client("import", str(output), "--disk", "archive", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "IOPS" in dry.stdout and "dry run: nothing stored" in dry.stdout
    assert bench.stack.call("GET", f"/api/v1/runs/?disk={disk['id']}")["results"] == []

    stored = subprocess.run([str(CLIENT), "import", "-", "--disk", "archive", "--name", "night 1"],
                            input=output.read_text(), env=bench.client_env, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    run_id = bench.stack.call("GET", f"/api/v1/runs/?disk={disk['id']}")["results"][0]["id"]
    assert f"stored as run {run_id}: {bench.stack.url}/runs/{run_id}/" in stored.stdout

    again = bench.client("import", str(output), "--disk", "archive")
    assert again.returncode == 2 and "already imported" in again.stderr and str(run_id) in again.stderr

    listed = bench.client("results", "--disk", "archive", "--json")
    assert [row["run_id"] for row in json.loads(listed.stdout)] == [str(run_id)]
    csv_file = tmp_path / "runs.csv"
    exported = bench.client("export", "runs", "--disk", "archive", "-o", str(csv_file))
    assert exported.returncode == 0, exported.stderr
    lines = csv_file.read_text().splitlines()
    assert lines[0].startswith("run_id,state,") and lines[1].startswith(f"{run_id},succeeded,") and len(lines) == 2
