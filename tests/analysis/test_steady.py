"""Steady state: fio's verdict read from real output, benchweb's SNIA check on constructed series, the profile's
ss settings (model, form, API, job file) and the stamp a stored run gets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from jobs.analysis import steady
from jobs.api.models import ApiToken
from jobs.imports import importing
from jobs.models import Profile, Run, RunResult
from jobs.tools import fio
from jobs.tools.options import ToolOptionError
from jobs.tools.summary import ParseError
from tests.factories import RunFactory

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN_DIR = "/var/tmp/benchweb/runs/2b1f0c9e-6a51-4d0e-9a7e-0c5d3f1e8a42"


def samples(values: list[float]) -> list[dict]:
    return [{"t_s": float(t), "read_iops": value, "write_iops": None} for t, value in enumerate(values, 1)]


def fio_params(**changes: object) -> dict:
    params = {
        "tool": "fio", "block_size_bytes": 4096, "runtime_s": 60, "direct": True, "read_percent": 100, "jobs": 1,
        "size_bytes": 1 << 24, "rw": "randread", "iodepth": 1, "time_based": True, "ramp_time_s": 0,
        "ioengine": "psync", "extra_options": {},
    }  # fmt: skip
    return params | changes


# ----------------------------------------------------------------------------------------- benchweb's SNIA check


def test_a_flat_series_is_steady_by_the_snia_rule():
    stamp = steady.judge(samples([5000.0] * 10 + [4000.0, 4010.0, 3990.0, 4005.0, 3995.0] * 2))
    assert stamp["state"] == "steady" and stamp["by"] == "benchweb"
    assert stamp["rounds"] == 5 and stamp["window_s"] == 10.0  # the last half: 10 of 20 samples
    assert stamp["range_percent"] < 1 and stamp["slope_percent"] < 1
    assert "SNIA PTS" in stamp["rule"]


def test_a_ramp_is_not_steady_because_of_its_slope():
    # 4 % more every second: the rounds' range stays under 20 % but the fitted line moves more than 10 %.
    stamp = steady.judge(samples([1000.0 * 1.02**t for t in range(20)]))
    assert stamp["state"] == "not_steady"
    assert stamp["slope_percent"] > 10 and stamp["range_percent"] <= 20
    assert "fitted line" in stamp["why"] and "range" not in stamp["why"]


def test_noise_of_30_percent_is_not_steady_because_of_its_range():
    # Rounds alternating 30 % above and below the average: no slope to speak of, a range of 60 %.
    rounds = [1300.0, 700.0, 1300.0, 700.0, 1300.0]
    stamp = steady.judge(samples([1000.0] * 20 + [value for value in rounds for _ in range(4)]))
    assert stamp["state"] == "not_steady"
    assert stamp["range_percent"] > 20 and stamp["slope_percent"] <= 10
    assert "range" in stamp["why"] and "fitted line" not in stamp["why"]


def test_too_few_samples_are_not_checked_and_say_why():
    short = steady.judge(samples([1000.0] * 9))
    assert short["state"] == "not_checked" and "only 9 per-second samples" in short["why"]
    assert steady.judge([])["why"] == "the output holds no per-second samples"
    assert steady.steady_flag(short) is None


def test_reads_and_writes_are_judged_together():
    mixed = [{"t_s": float(t), "read_iops": 700.0, "write_iops": 300.0} for t in range(1, 21)]
    assert steady.judge(mixed)["average_iops"] == 1000.0


# ----------------------------------------------------------------------------------------- fio's own verdict


def test_fio_stopped_early_once_the_slope_held_and_the_stamp_says_when():
    parsed = fio.parse_fio_json((FIXTURES / "fio-3.33-ss-attained.json").read_text())
    assert parsed.steadystate == [
        {"metric": "iops_slope", "limit": "0.300000%", "duration_s": 5, "attained": True, "criterion": "0.000000%",
         "max_deviation": 0.0, "slope": 0.0, "elapsed_s": 8},
    ]  # fmt: skip
    stamp = steady.stamp(parsed.steadystate, parsed.summary["samples"])
    assert stamp == {"state": "steady", "by": "fio", "metric": "iops_slope", "limit": "0.300000%",
                     "criterion": "0.000000%", "window_s": 5, "at_s": 8}  # fmt: skip
    assert steady.describe(stamp) == "Steady state: reached after 8 s (fio, iops_slope 0.3 % over 5 s)."
    assert steady.steady_flag(stamp) is True


def test_fio_ran_to_its_runtime_without_the_band_holding():
    parsed = fio.parse_fio_json((FIXTURES / "fio-3.33-ss-not-attained.json").read_text())
    (record,) = parsed.steadystate or []
    assert record["attained"] is False and record["criterion"] == "37.761444%" and record["elapsed_s"] == 10
    stamp = steady.stamp(parsed.steadystate, parsed.summary["samples"])
    assert stamp["state"] == "not_steady" and stamp["by"] == "fio"
    assert stamp["why"].startswith("fio's deadline (runtime) came first")
    assert "37.761444%" in stamp["why"] and "0.001000%" in stamp["why"]
    assert steady.describe(stamp).startswith("Not steady: fio's deadline (runtime) came first")
    assert steady.steady_flag(stamp) is False


def test_an_absolute_limit_is_kept_as_fio_printed_it():
    parsed = fio.parse_fio_json((FIXTURES / "fio-3.33-ss-absolute.json").read_text())
    (record,) = parsed.steadystate or []
    assert record["limit"] == "5.000000" and record["criterion"] == "0.750000" and record["max_deviation"] == 0.75
    assert "iops 5 over 4 s" in steady.describe(steady.from_fio([record]))


def test_several_entries_are_steady_only_when_every_one_attained():
    parsed = fio.parse_fio_json((FIXTURES / "fio-3.33-ss-attained.json").read_text())
    (held,) = parsed.steadystate or []
    later = held | {"elapsed_s": 11}
    assert steady.from_fio([held, later])["at_s"] == 11
    missed = held | {"attained": False, "criterion": "4.000000%"}
    both = steady.from_fio([held, missed])
    assert both["state"] == "not_steady" and "4.000000%" in both["why"]
    assert steady.describe(steady.from_fio([held | {"elapsed_s": None}])).startswith("Steady state: reached (fio,")


def test_output_without_ss_has_no_fio_verdict_and_is_judged_by_benchweb():
    parsed = fio.parse_fio_json((FIXTURES / "fio-3.33-randrw-status-interval.json").read_text())
    assert parsed.steadystate is None
    assert steady.stamp(parsed.steadystate, parsed.summary["samples"])["by"] == "benchweb"


def test_a_mangled_steadystate_object_is_a_parse_error_naming_it():
    text = (FIXTURES / "fio-3.33-ss-attained.json").read_text()
    with pytest.raises(ParseError, match='"ss" should be a criterion'):
        fio.parse_fio_json(text.replace('"ss" : "iops_slope:0.300000%"', '"ss" : "rm -rf"'))


# ----------------------------------------------------------------------------------------- the job file


def test_the_job_file_carries_the_ss_lines_and_fio_accepts_them(fio_installed, tmp_path):
    params = fio_params(ss_metric="iops_slope", ss_limit="0.3%", ss_dur_s=30, ss_ramp_s=10)
    job = fio.build_fio_job(params, str(tmp_path), "directory", RUN_DIR, readonly=False)
    assert job.jobfile.splitlines()[-3:] == ["ss=iops_slope:0.3%", "ss_dur=30", "ss_ramp=10"]
    path = tmp_path / "job.fio"
    path.write_text(job.jobfile)
    checked = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr


def test_a_job_without_ss_has_no_ss_line():
    job = fio.build_fio_job(fio_params(), "/data", "directory", RUN_DIR, readonly=False)
    assert "ss" not in {line.split("=")[0] for line in job.jobfile.splitlines()}


def test_a_snapshot_with_a_bad_limit_is_refused_naming_the_field():
    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(fio_params(ss_metric="iops", ss_limit="1;x", ss_dur_s=5), "/d", "directory", RUN_DIR,
                          readonly=False)  # fmt: skip
    assert refused.value.field == "ss_limit"


# ----------------------------------------------------------------------------------------- the profile


def _profile(**fields: object) -> Profile:
    return Profile(**({"name": "p", "runtime_s": 60} | fields))


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"ss_metric": "iops_slope", "ss_dur_s": 30}, "ss_limit", "Give the limit"),
        ({"ss_metric": "iops_slope", "ss_limit": "abc", "ss_dur_s": 30}, "ss_limit", "not a limit fio takes"),
        ({"ss_metric": "iops", "ss_limit": "0%", "ss_dur_s": 30}, "ss_limit", "above 0"),
        ({"ss_metric": "iops_slope", "ss_limit": "0.3%"}, "ss_dur_s", "Give the window"),
        ({"ss_metric": "iops_slope", "ss_limit": "0.3%", "ss_dur_s": 1}, "ss_dur_s", "at least 2"),
        (
            {"ss_metric": "iops_slope", "ss_limit": "0.3%", "ss_dur_s": 50, "ss_ramp_s": 10},
            "ss_dur_s",
            "before the runtime",
        ),
        ({"ss_limit": "0.3%"}, "ss_limit", "without a steady-state criterion"),
        ({"tool": "ndisk64", "ss_metric": "iops", "ss_limit": "5%", "ss_dur_s": 5}, "ss_metric", "ndisk64 has no"),
    ],
)
def test_steady_state_settings_are_refused_on_the_field_to_fix(db, fields, field, words):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        _profile(**fields).clean()
    assert words in " ".join(refused.value.message_dict[field])


def test_parameters_snapshot_ss_only_when_a_criterion_is_set(db):
    plain = _profile().parameters()
    assert not {key for key in plain if key.startswith("ss_")}
    asked = _profile(ss_metric="bw_slope", ss_limit="0.5%", ss_dur_s=20).parameters()
    assert asked["ss_metric"] == "bw_slope" and asked["ss_limit"] == "0.5%" and asked["ss_dur_s"] == 20
    assert asked["ss_ramp_s"] is None


def _form_data(**changes: str) -> dict:
    data = {
        "name": "steady randread", "description": "", "tool": "fio", "rw": "randread", "pattern": "random",
        "read_percent": "50", "block_size_bytes": "4k", "iodepth": "32", "jobs": "1", "runtime_s": "60",
        "ramp_time_s": "0", "time_based": "on", "direct": "on", "size_bytes": "1G", "ioengine": "libaio",
        "extra_options": "", "ss_metric": "", "ss_limit": "", "ss_dur_s": "", "ss_ramp_s": "",
    }  # fmt: skip
    return data | changes


def test_the_form_offers_the_suggested_settings_and_previews_the_ss_lines(owner_client, team):
    page = owner_client.get("/profiles/new/")
    html = page.content.decode()
    assert 'id="steady-state"' in html and "iops_slope" in html and 'placeholder="0.3%"' in html
    assert json.loads(page.context["form"].ss_suggested_json)["slope"] == {"ss_limit": "0.3%", "ss_dur_s": 30,
                                                                            "ss_ramp_s": 10}  # fmt: skip
    data = _form_data(ss_metric="iops_slope", ss_limit="0.3%", ss_dur_s="30", ss_ramp_s="10")
    preview = owner_client.get("/profiles/preview.json", data).json()
    assert "ss=iops_slope:0.3%\nss_dur=30\nss_ramp=10" in preview["text"]
    response = owner_client.post("/profiles/new/", data)
    profile = Profile.objects.get(team=team, name="steady randread")
    assert response["Location"] == f"/profiles/{profile.pk}/"
    detail = owner_client.get(response["Location"]).content.decode()
    assert "ss=iops_slope:0.3%" in detail and "stays within 0.3% over 30 s" in detail


def test_the_form_refuses_a_window_longer_than_the_runtime_on_its_field(owner_client, team):
    data = _form_data(runtime_s="20", ss_metric="iops_slope", ss_limit="0.3%", ss_dur_s="30")
    response = owner_client.post("/profiles/new/", data)
    assert response.status_code == 200
    assert "before the runtime" in " ".join(response.context["form"].errors["ss_dur_s"])
    preview = owner_client.get("/profiles/preview.json", data).json()
    assert "ss_dur_s" in preview["errors"]
    assert not Profile.objects.filter(team=team).exists()


def test_an_ndisk64_form_drops_the_hidden_ss_fields(owner_client, team):
    data = _form_data(tool="ndisk64", size_bytes="32M", ss_metric="iops", ss_limit="0.3%", ss_dur_s="30")
    owner_client.post("/profiles/new/", data)
    profile = Profile.objects.get(team=team, name="steady randread")
    assert profile.ss_metric == "" and profile.ss_dur_s is None


def test_the_api_takes_ss_settings_and_refuses_bad_ones_naming_the_field(owner, team):
    _, secret = ApiToken.issue(owner, team, "tests")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def create(body: dict) -> object:
        return api.post("/api/v1/profiles/", json.dumps(body), content_type="application/json")

    good = create({"name": "ss", "ss_metric": "iops_slope", "ss_limit": "0.3%", "ss_dur_s": 30, "ss_ramp_s": 5})
    assert good.status_code == 201, good.content
    assert {k: good.json()[k] for k in ("ss_metric", "ss_limit", "ss_dur_s", "ss_ramp_s")} == {
        "ss_metric": "iops_slope", "ss_limit": "0.3%", "ss_dur_s": 30, "ss_ramp_s": 5}  # fmt: skip
    no_window = create({"name": "a", "ss_metric": "iops", "ss_limit": "10%"})
    assert no_window.status_code == 400 and "ss_dur_s" in no_window.json()
    ndisk = create({"name": "b", "tool": "ndisk64", "size_bytes": 2**20, "ss_metric": "iops", "ss_limit": "5%",
                    "ss_dur_s": 5})  # fmt: skip
    assert ndisk.status_code == 400 and "ndisk64 has no" in str(ndisk.json()["ss_metric"])
    unknown = create({"name": "c", "ss_metric": "latency", "ss_limit": "5%", "ss_dur_s": 5})
    assert unknown.status_code == 400 and "ss_metric" in unknown.json()


# ----------------------------------------------------------------------------------------- stored runs


def test_an_imported_fio_run_with_ss_is_stamped_and_its_result_flagged(disk):
    text = (FIXTURES / "fio-3.33-ss-not-attained.json").read_text()
    run = importing.import_result(disk, text, name="tight band", at=timezone.now())
    assert run.steady_state["state"] == "not_steady" and run.steady_state["by"] == "fio"
    assert RunResult.objects.get(run=run).steady is False


def test_an_imported_text_report_is_not_checked(disk):
    run = importing.import_result(disk, (FIXTURES / "fio-3.33-randrw.txt").read_text(), name="text")
    assert run.steady_state["state"] == "not_checked" and run.steady_state["by"] == "benchweb"
    assert RunResult.objects.get(run=run).steady is None


def test_a_run_stored_before_stamps_has_an_empty_flag_and_reads_as_not_checked(disk):
    run = RunFactory(disk=disk, state=Run.State.SUCCEEDED, finished_at=timezone.now(),
                     summary={"tool": "fio", "total": {"iops": 10.0, "bw_bytes_per_s": 40960.0}})  # fmt: skip
    assert run.steady_state is None and RunResult.of(run).steady is None
    assert steady.describe(run.steady_state).startswith("Not checked")


# ----------------------------------------------------------------------------------------- pages, API, charts


def _stamped_runs(disk, states: list[str | None]) -> list[Run]:
    """Succeeded runs a minute apart, the last finished now, stamped with the given states (None: never)."""
    from datetime import timedelta

    from tests.factories import RunFactory

    now = timezone.now()
    runs = []
    for i, state in enumerate(states):
        stamp = None if state is None else {"state": state, "by": "benchweb", "why": "constructed"}
        finished = now - timedelta(minutes=len(states) - i)
        runs.append(RunFactory(disk=disk, succeeded=True, finished_at=finished, steady_state=stamp, recorded=True,
                               profile_name="4k randread"))  # fmt: skip
    return runs


def test_the_disk_series_flags_each_point_and_can_leave_unsteady_runs_out(owner_client, disk):
    runs = _stamped_runs(disk, ["steady", "not_steady", "not_checked", None, "steady"])
    every = owner_client.get(f"/disks/{disk.pk}/series.json?range=all").json()
    total = every["series"][0]["iops"]["total"]
    assert total["run"] == [run.pk for run in runs]
    assert total["steady"] == [True, False, None, None, True] and every["steady"] == "all"
    only = owner_client.get(f"/disks/{disk.pk}/series.json?range=all&steady=only").json()
    assert only["steady"] == "only" and only["runs"] == 2
    assert only["series"][0]["iops"]["total"]["run"] == [runs[0].pk, runs[4].pk]
    assert only["series"][0]["latency_us"]["read"]["p99"]["steady"] == [True, True]
    bad = owner_client.get(f"/disks/{disk.pk}/series.json?steady=yes")
    assert bad.status_code == 400 and "'steady' must be 'only'" in bad.json()["error"]


def test_series_drawn_from_days_carry_the_same_flags(owner_client, disk, monkeypatch):
    from jobs.results import series as chart_series

    runs = _stamped_runs(disk, ["steady", "not_steady", "not_checked"])
    flags = {run.pk: steady.steady_flag(run.steady_state) for run in runs}
    url = f"/disks/{disk.pk}/series.json?range=all"
    monkeypatch.setattr(chart_series, "DAY_BUCKETS_ABOVE", 1)
    monkeypatch.setattr(chart_series, "DAYS_ALWAYS_ABOVE", 1)
    total = owner_client.get(url).json()["series"][0]["iops"]["total"]
    assert len(total["run"]) >= 2  # one day: its lowest and highest run, and the range's first and last
    assert total["steady"] == [flags[run] for run in total["run"]]
    # Steady-only never reads the day rollups, which count every run.
    only = owner_client.get(url + "&steady=only").json()
    assert only["series"][0]["iops"]["total"]["steady"] == [True]


def test_the_disk_api_series_takes_the_steady_filter(owner, team, disk):
    _stamped_runs(disk, ["not_steady", "steady"])
    _, secret = ApiToken.issue(owner, team, "tests")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    answer = api.get(f"/api/v1/disks/{disk.pk}/series/?range=all&steady=only").json()
    assert answer["runs"] == 1 and answer["series"][0]["iops"]["total"]["steady"] == [True]


def test_the_run_page_and_api_say_whether_the_run_was_steady(owner, team, owner_client, disk):
    fio_run, old_run = _stamped_runs(disk, ["steady", None])
    fio_run.steady_state = steady.from_fio(
        fio.parse_fio_json((FIXTURES / "fio-3.33-ss-attained.json").read_text()).steadystate or []
    )
    fio_run.save()
    page = owner_client.get(f"/runs/{fio_run.pk}/").content.decode()
    assert "Steady state: reached after 8 s (fio, iops_slope 0.3 % over 5 s)." in page
    old_page = owner_client.get(f"/runs/{old_run.pk}/").content.decode()
    assert 'id="run-steady"' in old_page and "Not checked: this run was stored before" in old_page
    _, secret = ApiToken.issue(owner, team, "tests")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    detail = api.get(f"/api/v1/runs/{fio_run.pk}/").json()
    assert detail["steady_state"]["state"] == "steady" and detail["steady_state"]["at_s"] == 8
    assert api.get(f"/api/v1/runs/{old_run.pk}/").json()["steady_state"] is None


def test_a_failed_run_page_says_nothing_about_steady_state(owner_client, disk):
    from tests.factories import RunFactory

    run = RunFactory(disk=disk, failed=True)
    assert 'id="run-steady"' not in owner_client.get(f"/runs/{run.pk}/").content.decode()
