"""The client's pure parts, on runs as the API gives them: the gates, the progress board, the settings and the
idempotency key a CI job gets."""

from __future__ import annotations

import http.server
import io
import json
import threading
from collections.abc import Iterator

import pytest
from benchweb_client import cli, config, gates, waiting
from benchweb_client.api import Api
from benchweb_client.errors import ClientError

RUN = {
    "id": 7, "state": "succeeded", "final": True, "warnings": [], "verdicts": [],
    "steady_state": {"state": "not_steady", "why": "the IOPS range was 31 % of the average"},
    "limits_snapshot": {"iops": 3000, "effective_iops": 2500},
    "summary": {"total": {"iops": 2400.0}, "read": {"clat_us": {"p99": 1800.0, "p99_9": 4100.0}},
                "write": {"clat_us": {"p99": 2300.0, "p99_9": 3900.0}}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "status", "message"),
    [
        ("promise:10", gates.PASS, "2,400 IOPS is 4.0 % below the promise of 2,500 IOPS"),
        ("promise:2", gates.FAIL, "2,400 IOPS is 4.0 % below the promise of 2,500 IOPS (allowed 2 % below)"),
        ("p99<=2ms", gates.FAIL, "p99 2.3 ms (ceiling 2 ms)"),  # the worse direction: write
        ("p99.9<=4100us", gates.PASS, "p99.9 4.1 ms (ceiling 4.1 ms)"),
        ("steady", gates.FAIL, "not steady: the IOPS range was 31 % of the average"),
        ("fresh-blocks", gates.PASS, "no fresh-blocks warning"),
        ("client-bound", gates.PASS, "no client-bound verdict"),
    ],
)
def test_a_gate_judges_the_run_and_says_the_figure(text, status, message):
    assert gates.check(gates.parse(text), RUN) == gates.Check(text, status, message)


def test_validity_gates_fail_on_the_runs_stamps_and_verdicts():
    stamped = RUN | {
        "warnings": ["Fresh blocks: the test files were laid out by fio just now."],
        "verdicts": [{"kind": "client_bound", "text": "client-bound: CPU 3 was 99 % busy", "evidence": {}}],
    }
    assert gates.check(gates.parse("fresh-blocks"), stamped).message == "the test files were laid out by fio just now"
    assert gates.check(gates.parse("client-bound"), stamped) == gates.Check(
        "client-bound", "fail", "CPU 3 was 99 % busy"
    )
    assert gates.check(gates.parse("verdicts"), stamped).status == gates.FAIL
    assert gates.check(gates.parse("cache-suspected"), stamped).status == gates.PASS


def test_a_gate_without_its_figure_is_skipped_or_failed_never_passed():
    bare = RUN | {"limits_snapshot": {"error": "a custom disk needs its IOPS"}, "steady_state": None, "summary": {}}
    assert gates.check(gates.parse("promise"), bare).status == gates.SKIP
    assert "a custom disk needs its IOPS" in gates.check(gates.parse("promise"), bare).message
    assert gates.check(gates.parse("steady"), bare).status == gates.SKIP
    assert gates.check(gates.parse("p99<=1s"), bare).status == gates.FAIL
    assert gates.check(gates.parse("client-bound"), RUN | {"verdicts": None}).status == gates.SKIP


def test_the_baseline_gate_reads_the_products_compare():
    slower = {"verdict": "significant", "percent": -12.5, "text": "Total IOPS -12.5 % (p = 0.004)"}
    assert gates.check(gates.parse("baseline"), RUN, slower).status == gates.FAIL
    assert gates.check(gates.parse("baseline:20"), RUN, slower).status == gates.PASS
    assert gates.check(gates.parse("baseline"), RUN, slower | {"percent": 3.0}).status == gates.PASS
    assert gates.check(gates.parse("baseline"), RUN, {"verdict": "not_enough", "text": "n"}).status == gates.SKIP


@pytest.mark.parametrize("text", ["promise:x", "steady:3", "p99<2ms", "fast"])
def test_a_gate_that_is_not_one_is_refused_saying_what_is(text):
    with pytest.raises(gates.GateError, match=f"--gate {text}"):
        gates.parse(text)


def test_on_a_terminal_the_progress_lines_are_redrawn_in_place():
    out = io.StringIO()
    board = waiting.Board(out, tty=True, every=10)
    board.show(["a 1", "b 1"])
    board.show(["a 2", "b 2"])
    assert out.getvalue() == "\x1b[2Ka 1\n\x1b[2Kb 1\n\x1b[2F\x1b[2Ka 2\n\x1b[2Kb 2\n"


def test_elsewhere_a_progress_line_is_printed_every_few_seconds_and_at_the_end():
    out = io.StringIO()
    board = waiting.Board(out, tty=False, every=3600)
    board.show(["a 1"])
    board.show(["a 2"])
    board.show(["a 3"], force=True)
    assert out.getvalue() == "a 1\na 3\n"


def test_a_progress_line_has_the_state_the_iops_so_far_and_the_eta():
    running = {"id": 3, "state": "running", "final": False, "explanation": "running",
               "progress": {"read_iops": 1200.4, "write_iops": 300, "eta_s": 75}}  # fmt: skip
    assert waiting.progress_line("h:d", running) == "disk h:d: run 3 running, 1,500 IOPS so far, ETA 1 min 15 s"


def test_a_wait_reads_the_runs_going_together_and_each_whole_once_when_it_ended():
    # Three runs: 1 ends at the second poll, 2 at the third, 3 is gone from the list (deleted with its disk).
    states = {1: ["running", "succeeded"], 2: ["running", "running", "succeeded"], 3: []}
    polls: list[list[int]] = []
    whole: list[int] = []

    def fetch_going(ids: list[int]) -> dict[int, dict]:
        polls.append(ids)
        found = {}
        for i in ids:
            if states[i]:
                state = states[i].pop(0)
                found[i] = {"id": i, "state": state, "final": state == "succeeded", "progress": {"eta_s": 5}}
        return found

    def fetch(run_id: int) -> dict:
        whole.append(run_id)
        return {"id": run_id, "state": "succeeded" if run_id != 3 else "error", "final": True, "summary": {}}

    runs = {i: {"id": i, "state": "queued", "final": False} for i in (1, 2, 3)}
    board = waiting.Board(io.StringIO(), tty=False, every=60)
    waiting.wait(runs, {i: f"d{i}" for i in runs}, fetch, fetch_going, board, poll_s=0)

    assert polls == [[1, 2, 3], [1, 2], [2]]
    assert sorted(whole) == [1, 2, 3] and len(whole) == 3
    assert {i: run["state"] for i, run in runs.items()} == {1: "succeeded", 2: "succeeded", 3: "error"}


def test_flags_beat_the_environment_which_beats_the_file_and_the_token_is_never_shown(tmp_path, monkeypatch):
    path = tmp_path / "client.toml"
    path.write_text('url = "http://file:8000"\ntoken = "from-the-file"\n')
    monkeypatch.delenv(config.URL_ENV, raising=False)
    monkeypatch.delenv(config.TOKEN_ENV, raising=False)
    found = config.load(None, None, str(path))
    assert (found.url, found.token, found.token_from) == ("http://file:8000", "from-the-file", str(path))
    monkeypatch.setenv(config.TOKEN_ENV, "from-the-env")
    assert config.load(None, None, str(path)).token_from == config.TOKEN_ENV
    flagged = config.load("https://flag/", "from-a-flag", str(path))
    assert (flagged.url, flagged.token, flagged.url_from) == ("https://flag", "from-a-flag", "--url")
    assert "from-a-flag" not in repr(flagged)


def test_missing_settings_say_which_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv(config.URL_ENV, raising=False)
    monkeypatch.delenv(config.TOKEN_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(ClientError, match="no benchweb address: set BENCHWEB_URL"):
        config.load(None, None, None)
    with pytest.raises(ClientError, match="no API token: set BENCHWEB_TOKEN"):
        config.load("http://127.0.0.1:8000", None, None)
    with pytest.raises(ClientError, match="does not exist"):
        config.load(None, None, str(tmp_path / "nowhere.toml"))


def test_a_ci_job_gets_an_idempotency_key_of_its_own(monkeypatch):
    for name in ("GITHUB_RUN_ID", "GITHUB_JOB", "CI_PIPELINE_ID", "CI_JOB_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert cli.idempotency_key(None) is None
    monkeypatch.setenv("CI_PIPELINE_ID", "981")
    monkeypatch.setenv("CI_JOB_NAME", "storage-gate")
    assert cli.idempotency_key(None) == "981-storage-gate"
    monkeypatch.setenv("GITHUB_RUN_ID", "4711")
    monkeypatch.setenv("GITHUB_JOB", "check")
    assert cli.idempotency_key(None) == "4711-check"
    assert cli.idempotency_key("given") == "given"


class _Restarting(http.server.BaseHTTPRequestHandler):
    """benchweb behind a proxy while it restarts: 503 for the first `down` requests, then the run."""

    down = 0
    asked = 0
    status = 503

    def do_GET(self) -> None:
        kind = type(self)
        kind.asked += 1
        status, body = (kind.status, b"{}") if kind.asked <= kind.down else (200, json.dumps(RUN).encode())
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def restarting() -> Iterator[type[_Restarting]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Restarting)
    _Restarting.asked, _Restarting.down, _Restarting.status = 0, 0, 503
    _Restarting.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield _Restarting
    server.shutdown()
    server.server_close()


def _api(url: str) -> Api:
    return Api(config.Config(url=url, token="bw_test", url_from="--url", token_from="--token"))


def test_a_wait_rides_out_benchweb_restarting_and_says_so(restarting):
    restarting.down = 2
    heard: list[str] = []

    run = _api(restarting.url).json_patiently("run", 30, heard.append, ids={"id": 7})

    assert run["id"] == 7 and restarting.asked == 3
    assert len(heard) == 2 and "is unavailable (503); retrying in 1 s" in heard[0], heard


def test_a_wait_gives_up_when_benchweb_stays_away_past_the_patience(restarting):
    restarting.down = 100

    with pytest.raises(ClientError, match=r"unavailable \(503\); gave up after 2 s of retrying"):
        _api(restarting.url).json_patiently("run", 2, lambda said: None, ids={"id": 7})
    assert 2 <= restarting.asked <= 3


def test_a_refusal_is_not_retried(restarting):
    restarting.down, restarting.status = 100, 404

    with pytest.raises(ClientError, match=r"refused \(404\)"):
        _api(restarting.url).json_patiently("run", 30, lambda said: None, ids={"id": 7})
    assert restarting.asked == 1
