"""Bad input stays a clear 4xx (issue 12, finding 5): a number no disk can produce is refused with its field
named in every format and on every path that stores one, and a body over the upload limit gets the API's JSON.

The outputs are the real ones in tests/fixtures/ with one number made huge, the way a damaged file or fio's
-1 printed as an unsigned 64-bit integer (18446744073709551615) looks.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from jobs.imports import importing
from jobs.models import Disk, Host, Profile, Run, RunResult, RunSample
from jobs.runners import FioRunner, NdiskRunner
from jobs.runs import queueing
from jobs.tools import bounds
from jobs.tools.detect import parse_output
from jobs.tools.summary import ParseError
from tests.builders import target_dir, team_with_host, wait_final
from tests.world import client_for, make_world

FIXTURES = Path(__file__).parent.parent / "fixtures"
HUGE = "18446744073709551615"  # 2**64 - 1: fio's -1 as an unsigned counter


def _json(name: str, change: Callable[[dict], None]) -> str:
    doc = json.loads((FIXTURES / name).read_text())
    change(doc)
    return json.dumps(doc, indent=1)


def _replace(name: str, old: str, new: str) -> str:
    text = (FIXTURES / name).read_text()
    assert old in text, f"{old!r} is no longer in {name}"
    return text.replace(old, new, 1)


def _replace_in(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def _terse(index: int) -> str:
    fields = (FIXTURES / "fio-3.33-randrw.terse").read_text().strip().split(";")
    fields[index] = HUGE
    return ";".join(fields) + "\n"


def _runtimes(doc: dict) -> None:
    for direction in ("read", "write"):
        doc["jobs"][0][direction]["runtime"] = int(HUGE)


def _big_bin(doc: dict) -> None:
    bins = doc["jobs"][0]["read"]["clat_ns"]["bins"]
    bins[next(iter(bins))] = 10**18  # a count of I/Os: 10^18 in 3 s


def _block_size(doc: dict) -> None:
    doc["jobs"][0]["job options"]["bs"] = "1024p"  # 2^60 bytes per I/O


# (format, output with one number made huge, the summary field the refusal names)
HUGE_OUTPUTS = [
    ("fio JSON 3.x runtime", _json("fio-3.33-randrw.json", _runtimes), "runtime_s"),
    ("fio JSON 3.x block size", _json("fio-3.33-randrw.json", _block_size), "block_size_bytes"),
    ("fio JSON 2.x io_bytes", _replace("fio-2.15-randrw.json", '"io_bytes" : 323972', f'"io_bytes" : {HUGE}'),
     "total.bw_bytes_per_s"),
    ("fio json+ bin count", _json("fio-3.33-randread-jsonplus.json", _big_bin), "latency_bins_ns.read"),
    ("fio text 3.x runtime", _replace("fio-3.33-randrw.txt", "(199MiB/3001msec)", f"(199MiB/{HUGE}msec)"),
     "runtime_s"),
    ("fio text 3.x latency", _replace("fio-3.33-randrw.txt", "max=4253, avg=41.25", f"max={HUGE}, avg=41.25"),
     "read.clat_us.max"),
    ("fio text 2.x bandwidth", _replace("fio-2.15-randrw.txt", "bw=107955KB/s", f"bw={HUGE}KB/s"),
     "total.bw_bytes_per_s"),
    ("terse v3 io", _terse(5), "total.bw_bytes_per_s"),
    ("terse v3 runtime", _terse(8), "runtime_s"),
    ("terse v3 iops", _terse(7), "total.iops"),
    ("ndisk64 KB/sec", _replace("ndisk_4proc_random_direct.txt", "78.24     80119.94", f"78.24     {HUGE}.00"),
     "total.bw_bytes_per_s"),
    ("ndisk64 seconds", _replace("ndisk_4proc_random_direct.txt", "20053.28  60.00", f"20053.28  {HUGE}.00"),
     "runtime_s"),
]  # fmt: skip
CASES = pytest.mark.parametrize(("fmt", "text", "field"), HUGE_OUTPUTS, ids=[case[0] for case in HUGE_OUTPUTS])


def _names(message: str, field: str) -> bool:
    return f"{field}" in message and "is beyond" in message and "at most" in message


@CASES
def test_every_parser_refuses_a_number_beyond_any_disk_naming_the_field_and_the_bound(fmt, text, field):
    with pytest.raises(ParseError) as refused:
        parse_output(text)
    assert _names(str(refused.value), field), str(refused.value)


@CASES
def test_the_api_refuses_a_huge_number_with_a_json_400_naming_the_field_and_stores_nothing(db, fmt, text, field):
    world, secret = make_world("ours")
    before = Run.objects.count()
    body = json.dumps({"disk": world.disk.pk, "text": text})
    response = client_for(secret).post("/api/v1/import/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert _names(response.json()["text"][0], field), response.json()
    assert Run.objects.count() == before and not RunResult.objects.exclude(run=world.run).exists()


def test_the_command_goes_on_after_a_huge_number_and_stores_the_good_file_after_it(disk, tmp_path):
    bad = tmp_path / "damaged.terse"
    bad.write_text(_terse(5))
    good = FIXTURES / "fio-3.33-randrw.json"
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as status:
        call_command("import_results", str(bad), str(good), "--disk", str(disk.pk), stdout=out, stderr=err)
    assert status.value.code == 2
    assert "damaged.terse: not imported: total.bw_bytes_per_s = " in err.getvalue()
    run = Run.objects.get()
    assert run.raw_output == good.read_text() and RunResult.objects.filter(run=run).exists()
    assert "1 of 2 file(s) imported, 1 failed" in out.getvalue()


def test_the_command_goes_on_after_an_unexpected_error_in_one_file(disk, tmp_path, monkeypatch):
    # The real parsers raise only ParseError (tests/tools/test_tool_properties.py); a stand-in bug shows the command
    # does not rely on it.
    first = tmp_path / "first.json"
    first.write_text((FIXTURES / "fio-3.33-randrw.json").read_text())
    real = importing.import_results

    def broken_once(disk, text, *, name, **kwargs):
        if name == "first.json":
            raise RuntimeError("stand-in bug")
        return real(disk, text, name=name, **kwargs)

    monkeypatch.setattr(importing, "import_results", broken_once)
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as status:
        call_command("import_results", str(first), str(FIXTURES / "ndisk_4proc_random_direct.txt"),
                     "--disk", str(disk.pk), stdout=out, stderr=err)  # fmt: skip
    assert status.value.code == 2
    assert "first.json: not imported: unexpected RuntimeError: stand-in bug" in err.getvalue()
    assert Run.objects.get().parameters["tool"] == "ndisk64"


@pytest.mark.parametrize(("fmt", "text", "field"), HUGE_OUTPUTS[::4], ids=[c[0] for c in HUGE_OUTPUTS[::4]])
def test_the_import_page_shows_the_refusal_naming_the_field_and_stores_nothing(owner_client, disk, fmt, text, field):
    preview = owner_client.post("/import/", {"step": "preview", "disk": disk.pk, "tool": "auto", "text": text})
    page = preview.content.decode()
    assert preview.status_code == 200
    assert "Cannot be read, nothing will be stored" in page and field in page
    assert 'name="step" value="save"' not in page
    saved = owner_client.post("/import/", {"step": "save", "disk": disk.pk, "tool": "auto", "finished_at": "",
                                           "source_name": "x", "source_text": text})  # fmt: skip
    assert saved.status_code == 200 and field in saved.content.decode()
    assert not Run.objects.exists()


# A run benchweb collects is fio JSON (--output-format=json --status-interval, json+ when asked) or ndisk64.
JSON_OUTPUTS = [case for case in HUGE_OUTPUTS if "JSON" in case[0] or "json+" in case[0]]


@pytest.mark.parametrize(("fmt", "text", "field"), JSON_OUTPUTS, ids=[case[0] for case in JSON_OUTPUTS])
def test_a_collected_fio_run_with_a_huge_number_fails_with_the_field_named(fmt, text, field):
    outcome = FioRunner().interpret({"result.json": text.encode(), "stdout": b"", "stderr": b""}, 0, {})
    assert outcome.state == "failed" and outcome.summary is None
    assert _names(outcome.explanation, field), outcome.explanation
    assert outcome.raw_output == text  # kept, to be looked at


def test_a_collected_ndisk64_run_with_a_huge_number_fails_with_the_field_named():
    text = HUGE_OUTPUTS[-1][1]
    outcome = NdiskRunner().interpret({"stdout": text.encode(), "stderr": b""}, 1, {"tool": "ndisk64"})
    assert outcome.state == "failed" and "runtime_s = " in outcome.explanation and "at most" in outcome.explanation


def test_nan_and_inf_that_fio_prints_with_percent_f_are_stored_as_not_reported(disk):
    text = _replace("fio-3.33-randrw.json", '"mean" : 36835.796762', '"mean" : nan')
    text = _replace_in(text, '"max" : 3588820', '"max" : inf')
    run = importing.import_result(disk, text, name="nan.json")
    run.refresh_from_db()  # read back from the database: NaN is not JSON, PostgreSQL would refuse it
    assert run.state == Run.State.SUCCEEDED and run.summary["read"]["clat_us"]["mean"] is None
    assert run.summary["read"]["clat_us"]["max"] is None
    assert run.summary["read"]["iops"] > 0


def test_every_real_fixture_is_within_the_bounds():
    for path in sorted(FIXTURES.iterdir()):
        if path.suffix in (".json", ".txt", ".terse"):
            summary = parse_output(path.read_text()).summary
            assert bounds.summary_problem(summary) is None, path.name


# --- the property: what a parser accepts can be stored -----------------------------------------------------

FIXTURE_TEXTS = {p.name: p.read_text() for p in sorted(FIXTURES.iterdir()) if p.suffix in (".json", ".txt", ".terse")}
# Numbers around every bound and every column's limit, and fio's own extremes.
EXTREMES = [2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 10**15, 10**15 + 1, 10**9 + 1, 316224001,
            10**20, 0, 1]  # fmt: skip
big_numbers = st.one_of(
    st.sampled_from(EXTREMES).map(str),
    st.integers(0, 2**64 - 1).map(str),
    st.floats(0, 1e30, allow_nan=False).map(lambda f: f"{f:.2f}"),
)


@st.composite
def outputs_with_big_numbers(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(FIXTURE_TEXTS)))
    text = FIXTURE_TEXTS[name]
    for _ in range(draw(st.integers(1, 6))):
        numbers = list(re.finditer(r"(?<![0-9.])[0-9]+(?:\.[0-9]+)?(?![0-9.])", text))
        match = numbers[draw(st.integers(0, len(numbers) - 1))]
        text = text[: match.start()] + draw(big_numbers) + text[match.end() :]
    note(f"from {name}")
    return text


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=outputs_with_big_numbers())
def test_any_output_the_parsers_accept_is_stored_for_real_or_refused_with_a_parse_error(disk, text):
    """Stored in the test database (SQLite, or PostgreSQL with DATABASE_URL): no overflow at store time."""
    try:
        run = importing.import_result(disk, text, name="fuzzed")
    except ParseError as exc:
        assert str(exc)
        event("refused")
        return
    except importing.DuplicateImport as exc:  # the same text drawn again: stored once, as its first draw
        assert exc.first.raw_output == text
        event("duplicate")
        return
    event("stored")
    run.refresh_from_db()
    assert run.trigger == Run.Trigger.IMPORT
    if run.state == Run.State.SUCCEEDED:
        result = RunResult.objects.get(run=run)
        assert result.bw_bytes_per_s is None or result.bw_bytes_per_s <= 10**15
    assert RunSample.objects.filter(run=run).count() == len(parse_output(text).summary["samples"])


def test_a_block_size_of_zero_is_refused_as_damaged_output_and_nothing_is_stored(disk):
    """Found by the fuzz above: bs=0k parsed to 0 bytes, and the import then failed computing the limits."""
    text = (FIXTURES / "fio-2.15-randrw.json").read_text().replace('"bs" : "4k"', '"bs" : "0k"')
    with pytest.raises(ParseError, match=r"block_size_bytes = 0 is below any real block size"):
        importing.import_result(disk, text, name="damaged")
    assert not Run.objects.filter(disk=disk).exists()


# --- bodies over the upload limit ------------------------------------------------------------------------------


def test_an_api_body_over_the_limit_gets_a_json_413_naming_the_limit(db, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2**20
    world, secret = make_world("ours")
    body = json.dumps({"disk": world.disk.pk, "text": "x" * (2**20 + 1)})
    response = client_for(secret).post("/api/v1/import/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    detail = response.json()["detail"]
    assert "1,048,576 bytes (1 MiB)" in detail and "import_results" in detail
    assert Run.objects.count() == 1  # only the world's own run


def test_a_session_form_post_to_the_api_over_the_limit_gets_the_json_413_too(owner_client, disk, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2**20
    body = urlencode({"disk": disk.pk, "text": "x" * (2**20 + 1)})
    response = owner_client.post("/api/v1/import/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413 and "MiB" in response.json()["detail"]


def test_malformed_json_gets_the_apis_json_400(api_ours):
    _, secret = api_ours
    response = client_for(secret).post("/api/v1/import/", "{not json", content_type="application/json")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert "JSON parse error" in response.json()["detail"]


def test_a_paste_over_the_limit_on_the_import_page_says_what_to_do(owner_client, disk, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2**20
    response = owner_client.post("/import/", {"step": "preview", "disk": disk.pk, "text": "x" * (2**20 + 1)})
    page = response.content.decode()
    assert response.status_code == 413
    assert "over the limit of 1,048,576 bytes" in page and "import_results" in page and "Back to Import" in page


def test_an_import_within_its_character_limit_is_never_refused_for_its_encoded_size(owner_client, disk, api_ours):
    # 2,000,000 characters (the import's own limit) of the punctuation tool output is full of: percent-encoded
    # (the page's save step) or JSON-escaped (the API), each becomes 2-3 bytes, over Django's default 2.5 MiB.
    text = '"\n{} ' * 400_000
    body = urlencode({"step": "save", "disk": disk.pk, "tool": "auto", "source_name": "x", "source_text": text})
    saved = owner_client.post("/import/", body, content_type="application/x-www-form-urlencoded")
    assert saved.status_code == 200 and "This is not output benchweb can read" in saved.content.decode()
    world, secret = api_ours
    response = client_for(secret).post("/api/v1/import/", json.dumps({"disk": world.disk.pk, "text": text}),
                                       content_type="application/json")  # fmt: skip
    assert response.status_code == 400 and "This is not output benchweb can read" in response.json()["text"][0]


@pytest.fixture
def api_ours(db):
    return make_world("ours")


@pytest.mark.parametrize("value", ["nan", "null", '"12"', HUGE])
def test_a_damaged_status_document_in_a_running_fios_tail_neither_stops_the_poll_nor_shows_a_huge_rate(value):
    doc = '{\n  "fio version" : "fio-3.33", "jobs": [{"read": {"total_ios": %s, "runtime": %s}}]}\n'
    progress = FioRunner().progress(doc % (0, 0) + doc % (value, 1000) + doc % (value, 2000), {})
    assert progress.get("read_iops", 0) <= bounds.MAX_IOPS


def test_a_finish_time_before_1970_is_a_400_on_its_field_not_a_date_overflow(api_ours, disk, owner_client):
    world, secret = api_ours
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()
    body = json.dumps({"disk": world.disk.pk, "text": text, "finished_at": "0001-01-01T00:00:00Z"})
    response = client_for(secret).post("/api/v1/import/", body, content_type="application/json")
    assert response.status_code == 400 and "before 1970" in response.json()["finished_at"][0]
    page = owner_client.post(
        "/import/", {"step": "preview", "disk": disk.pk, "text": text, "finished_at": "0001-01-01T00:00"}
    )
    assert "before 1970" in " ".join(page.context["form"].errors["finished_at"])
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit):
        call_command("import_results", str(FIXTURES / "fio-3.33-randrw.json"), "--disk", str(disk.pk),
                     "--at", "0001-01-01T00:00:00Z", stdout=out, stderr=err)  # fmt: skip
    assert "not imported: 0001-01-01T00:00:00+00:00 is before 1970" in err.getvalue()
    assert Run.objects.count() == 1  # the API world's own run


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_collected_run_whose_output_is_beyond_any_disk_fails_with_the_field_and_the_worker_goes_on(
    sshd, worker, tmp_path
):
    """ndisk64 cannot run here (AIX binary): a clearly named stand-in prints the real AIX report, damaged,
    through a real sshd and a real Celery worker; then the real stand-in's run on the same worker succeeds."""
    report = tmp_path / "damaged-report.txt"
    report.write_text(HUGE_OUTPUTS[-2][1])  # a bandwidth that overflowed RunResult's 64-bit column in the worker
    damaged = tmp_path / "ndisk64-damaged-standin.sh"
    damaged.write_text(f"#!/bin/sh\n# STAND-IN for ndisk64 printing a damaged report\ncat '{report}'\nexit 1\n")
    damaged.chmod(0o755)
    _team, host = team_with_host(sshd, ndisk64_path=str(damaged))
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    preset = Profile.objects.get(builtin=True, name="ndisk64: 4k random 50/50, 4 processes")
    run = wait_final(queueing.request_run(disk, preset))
    assert run.state == Run.State.FAILED
    assert "total.bw_bytes_per_s = " in run.explanation and "is beyond any real disk" in run.explanation
    assert run.summary is None and not RunResult.objects.filter(run=run).exists()
    assert run.raw_output == report.read_text()  # kept, to be looked at
    Host.objects.filter(pk=host.pk).update(ndisk64_path=str(FIXTURES / "ndisk64-standin.sh"))
    after = wait_final(queueing.request_run(disk, preset))
    assert after.state == Run.State.SUCCEEDED, after.explanation


# --- JSON nested too deeply --------------------------------------------------------------------------------------

DEEP_ARRAYS = "[" * 1000 + "]" * 1000  # past json's own limit (a RecursionError, an HTML 500 before)
JUST_TOO_DEEP = "[" * 33 + "]" * 33  # readable by json, one level past benchweb's limit (jobs/nesting.py)


def _deep_fio_json(levels: int) -> str:
    """The real fio JSON with a value nested `levels` deep inside its job, where fio prints none."""
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()
    return _replace_in(text, '"jobname"', '"x": ' + "[" * levels + "]" * levels + ', "jobname"')


@pytest.mark.parametrize("nested", [DEEP_ARRAYS, JUST_TOO_DEEP], ids=["1000-levels", "33-levels"])
@pytest.mark.parametrize(
    ("method", "url"),
    [("post", "/api/v1/import/"), ("post", "/api/v1/profiles/"), ("post", "/api/v1/tokens/"),
     ("post", "/api/v1/hosts/"), ("patch", "/api/v1/hosts/{host}/"), ("post", "/api/v1/schedules/")],
)  # fmt: skip
def test_a_json_body_nested_too_deeply_gets_a_json_400_naming_the_problem_and_stores_nothing(
    api_ours, method, url, nested
):
    world, secret = api_ours
    api = client_for(secret)
    api.raise_request_exception = False  # the 500 it once was, as a response
    before = (Run.objects.count(), Profile.objects.count(), Host.objects.get(pk=world.host.pk).name)
    body = '{"name": "deep", "extra": ' + nested + "}"
    response = getattr(api, method)(url.format(host=world.host.pk), body, content_type="application/json")
    assert response.status_code == 400, response.content[:200]
    assert response["Content-Type"] == "application/json"
    assert "nested more than 32 levels deep" in response.json()["detail"]
    assert (Run.objects.count(), Profile.objects.count(), Host.objects.get(pk=world.host.pk).name) == before


def test_a_json_body_nested_32_levels_is_read_as_any_other(api_ours):
    _, secret = api_ours
    body = {"name": "flat enough", "extra_options": {}, "description": "", "junk": json.loads("[" * 31 + "]" * 31)}
    response = client_for(secret).post("/api/v1/profiles/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content[:300]


def test_fio_json_nested_deep_enough_to_read_once_but_not_twice_is_refused_on_every_import_path(api_ours, tmp_path):
    # json's own limit depends on the caller's stack: 900 levels read in the dry parse and failed in the storing
    # one, a ParseError nobody caught there (an HTML 500 from the API).
    world, secret = api_ours
    api = client_for(secret)
    api.raise_request_exception = False
    text = _deep_fio_json(900)
    pasted = api.post("/api/v1/import/", json.dumps({"disk": world.disk.pk, "text": text}),
                      content_type="application/json")  # fmt: skip
    assert pasted.status_code == 400, pasted.content[:200]
    assert "nests more than 32 levels deep" in pasted.json()["text"][0]
    upload = io.BytesIO(text.encode())
    upload.name = "deep.json"
    uploaded = api.post("/api/v1/import/", {"disk": world.disk.pk, "files": [upload], "tool": "auto"})
    assert uploaded.status_code == 400 and "deep.json: line 1" in uploaded.json()["files"][0]
    file, err = tmp_path / "deep.json", io.StringIO()
    file.write_text(text)
    with pytest.raises(SystemExit):
        call_command("import_results", str(file), "--disk", str(world.disk.pk), stdout=io.StringIO(), stderr=err)
    assert "deep.json: not imported: line 1: the fio JSON document starting here nests more than 32" in err.getvalue()
    assert Run.objects.filter(trigger=Run.Trigger.IMPORT).count() == 0


def test_the_import_page_refuses_deeply_nested_fio_json_in_its_preview_and_its_save(owner_client, disk):
    owner_client.raise_request_exception = False
    text = _deep_fio_json(900)
    for step in ("preview", "save"):
        data = {"step": step, "disk": disk.pk, "tool": "auto", "text": text, "source_name": "x", "source_text": text}
        response = owner_client.post("/import/", data)
        assert response.status_code == 200
        assert "nests more than 32 levels deep" in response.content.decode()
    assert not Run.objects.filter(trigger=Run.Trigger.IMPORT).exists()


def test_deeply_nested_extra_options_on_the_profile_page_are_refused_on_their_field(owner_client, team):
    owner_client.raise_request_exception = False
    nested = '{"a": ' * 1200 + "1" + "}" * 1200
    preview = owner_client.get("/profiles/preview.json", {"tool": "fio", "extra_options": nested})
    assert preview.status_code == 200 and "name=value per line" in preview.json()["errors"]["extra_options"]
    page = owner_client.post("/profiles/new/", {"name": "deep", "tool": "fio", "extra_options": nested})
    assert page.status_code == 200 and "name=value per line" in page.content.decode()
    assert not Profile.objects.filter(name="deep").exists()


def test_any_other_reader_of_deeply_nested_json_answers_400_not_a_server_error(owner, owner_client, team):
    # The admin's JSON fields read with Django's forms.JSONField, which catches no RecursionError: the middleware
    # (jobs.middleware.TooDeepMiddleware) answers for it and any reader to come.
    owner_client.raise_request_exception = False
    type(owner).objects.filter(pk=owner.pk).update(is_staff=True, is_superuser=True)
    profile = Profile.objects.create(team=team, name="mine")
    nested = '{"a": ' * 1200 + "1" + "}" * 1200
    response = owner_client.post(f"/admin/jobs/profile/{profile.pk}/change/", {"name": "mine", "extra_options": nested})
    assert response.status_code == 400
    assert "nested more than 32 levels deep" in response.content.decode()
    profile.refresh_from_db()
    assert profile.extra_options == {}
