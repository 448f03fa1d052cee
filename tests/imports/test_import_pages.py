"""The import confirmation, the run page and the API show a result's figures as the tool printed them; outputs
with several results become a run each; the same output on a disk is stored once."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from jobs import presets
from jobs.imports import importing
from jobs.models import Profile, Run
from jobs.teams import membership as teams
from tests.browser import log_in, wait_until
from tests.factories import DiskFactory, RunFactory, fio_summary

FIXTURES = Path(__file__).parent.parent / "fixtures"
NDISK = FIXTURES / "ndisk_4proc_random_direct.txt"  # TOTALS 1201798 20030.0 | 78.24 80119.94
GROUPS = FIXTURES / "real/fio-3.33-two-write-groups.txt"  # group 0: 64k write 12 ms, 1 (stonewall): 4k randwrite
CLIENTS = FIXTURES / "real/fio-3.33-client-server-two-servers.txt"  # two fio servers and "All clients"
EXCERPT = "write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)\n"
PASSWORD = "a-long-import-password-7"


def _preview(client, disk, text: str, **more) -> str:
    data = {"step": "preview", "disk": disk.pk, "tool": "auto", "finished_at": "", "text": text} | more
    response = client.post("/import/", data)
    assert response.status_code == 200
    return response.content.decode()


def _confirmation(page: str) -> dict[str, list[str]]:
    """What the browser sends from the confirmation: its hidden fields and the ticked boxes (form=import-confirm)."""
    form = page[page.index('<form method="post" class="confirm"') :]
    form = form[: form.index("</form>")]
    data: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form):
        data.setdefault(name, []).append(html.unescape(value))
    data["source_text"] = [
        html.unescape(text).removeprefix("\n")
        for text in re.findall(r'<textarea name="source_text"[^>]*>(.*?)</textarea>', form, re.S)
    ]
    ticked = re.findall(r'<input type="checkbox" name="pick" value="([^"]*)" form="import-confirm" checked>', page)
    data.setdefault("pick", []).extend(html.unescape(value) for value in ticked)
    return data


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# ------------------------------------------------------------------ the confirmation


def test_the_confirmation_shows_ndisk64s_printed_figures_first_with_the_converted_value_beside(owner_client, disk):
    page = _text(_preview(owner_client, disk, NDISK.read_text()))
    assert "total 20,030.0 IO/s 80,119.94 KB/s (78.24 MB/s) = 78.24 MiB/s" in page
    assert "20k IOPS" not in page and "78.2 MiB/s" not in page  # no rounded forms where the result is shown first
    # ndisk64's "MB/sec" is 1024-based, so its 78.24 "MB/s" is 78.24 MiB/s: the page says so.
    assert "As ndisk64 printed them (its KB and MB are 1024-based: KiB and MiB)" in page
    assert not Run.objects.exists()


def test_the_confirmation_shows_fios_own_tokens_and_the_workload_read_from_the_output(owner_client, disk):
    page = _text(_preview(owner_client, disk, (FIXTURES / "fio-3.33-randrw.txt").read_text()))
    # fio wrote 17.0k; its issued count over its runtime (51010 / 3.001 s) goes beside, unrounded.
    assert "read 17.0k IOPS = 16,997.7 IOPS 66.4MiB/s (69.6MB/s)" in page
    assert "write 7,295 IOPS 28.5MiB/s (29.9MB/s)" in page
    assert "total (read + write, added by benchweb)" in page
    assert "rw randrw Block size 4096B iodepth 1 Jobs 1 Read % not in the output I/O engine psync" in page
    assert "Will be stored as randrw 4k QD1" in page and "source: pasted text" in page


def test_back_then_save_again_is_refused_with_a_link_to_the_first_run(owner_client, disk):
    confirmation = _confirmation(_preview(owner_client, disk, NDISK.read_text()))
    first = owner_client.post("/import/", confirmation)
    run = Run.objects.get()
    assert first.status_code == 302 and first["Location"] == f"/runs/{run.pk}/"
    assert run.import_fingerprint == importing.fingerprint(NDISK.read_text(), "")
    again = owner_client.post("/import/", confirmation)  # the browser's Back, then Save once more
    page = again.content.decode()
    assert again.status_code == 200 and Run.objects.count() == 1
    assert f"is already stored on this disk as run {run.pk}" in page
    assert f'<a href="/runs/{run.pk}/">run {run.pk}</a>' in page


def test_reading_an_output_already_stored_marks_it_and_offers_nothing_to_save(owner_client, disk):
    run = importing.import_result(disk, NDISK.read_text(), name="ndisk.txt")
    page = _preview(owner_client, disk, NDISK.read_text().replace("\n", "\r\n") + "\n\n")
    assert f'Already stored on this disk as <a href="/runs/{run.pk}/">run {run.pk}</a>' in page
    assert 'class="confirm"' not in page and "Nothing new to save" in page
    other = DiskFactory(host=disk.host, label="other", target_path="/data/other")
    assert "Already stored" not in _preview(owner_client, other, NDISK.read_text())


def test_several_groups_are_a_run_each_never_summed_and_only_the_ticked_ones_are_saved(owner_client, disk):
    page = _preview(owner_client, disk, GROUPS.read_text())
    ticked = _confirmation(page)["pick"]
    assert len(ticked) == 2 and all(pick.startswith("0:group ") for pick in ticked)
    assert "Save the ticked results" in page
    results = importing.parse_results(GROUPS.read_text())
    assert [r.summary["runtime_s"] for r in results] == [0.012, 0.125]  # each its own, never 0.137
    data = _confirmation(page) | {"pick": [ticked[1]]}
    response = owner_client.post("/import/", data)
    run = Run.objects.get()
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.parameters["label"] == "group 1 (randwrite)" and run.summary["runtime_s"] == pytest.approx(0.125)
    assert run.profile_name.startswith("randwrite 4k")
    rest = owner_client.post("/import/", data | {"pick": [ticked[0]]})  # the other group later: stored too
    assert rest.status_code == 302 and Run.objects.count() == 2
    assert "tick at least one result" in owner_client.post("/import/", data | {"pick": []}).content.decode()


def test_client_server_output_is_each_client_and_all_clients_as_series_of_their_own(owner_client, disk):
    page = _preview(owner_client, disk, CLIENTS.read_text())
    ticked = _confirmation(page)["pick"]
    assert ticked == ["0:client 1", "0:client 2", "0:All clients"]  # all preselected, the total too
    # ... and the confirmation offers the group import, one member a client on a disk of its own.
    assert 'fio --client, 2 clients: <a href="/import/group/">import it as a group</a>' in page
    assert owner_client.post("/import/", _confirmation(page))["Location"] == f"/disks/{disk.pk}/"
    runs = Run.objects.order_by("pk")
    assert [run.parameters["label"] for run in runs] == ["client 1", "client 2", "All clients"]
    assert [run.profile_name for run in runs] == [
        "randread 4k QD1 · client 1", "randread 4k QD1 · client 2", "randread 4k QD1 · All clients"
    ]  # fmt: skip
    chart = owner_client.get(f"/disks/{disk.pk}/series.json?range=all").json()
    assert len(chart["series"]) == 3  # a client's figure is never drawn in the same line as the total


def test_an_excerpt_is_stored_as_a_partial_result_marked_as_such_everywhere(owner_client, disk):
    page = _preview(owner_client, disk, EXCERPT)
    assert "Partial result:" in page
    assert "23.4k IOPS" in _text(page) and "91.6MiB/s (96.0MB/s)" in _text(page)
    owner_client.post("/import/", _confirmation(page))
    run = Run.objects.get()
    assert run.parameters["partial"]
    run_page = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Partial result:" in run_page and run.parameters["partial"] in html.unescape(run_page)
    assert "<caption>Completion latency</caption>" not in run_page  # the line has none: no table of dashes
    assert owner_client.get(f"/api/v1/runs/{run.pk}/").json()["result"]["partial"] == run.parameters["partial"]


# ------------------------------------------------------------------ the run page


def test_the_run_page_shows_the_printed_figures_first_and_the_source(owner_client, disk):
    run = importing.import_result(disk, NDISK.read_text(), name="aix-run.txt")
    page = _text(owner_client.get(f"/runs/{run.pk}/").content.decode())
    assert "total 20,030.0 IO/s 80,119.94 KB/s (78.24 MB/s) = 78.24 MiB/s" in page
    assert "Imported from aix-run.txt (ndisk64)" in page
    assert "20k IOPS" not in page


def test_an_older_run_without_printed_figures_shows_its_stored_numbers_in_full(owner_client, disk):
    run = RunFactory(disk=disk, succeeded=True, summary=fio_summary(read_iops=1506.0))
    page = _text(owner_client.get(f"/runs/{run.pk}/").content.decode())
    assert "read 1,506 IOPS 5.88 MiB/s" in page
    assert "Stored values, in full" in page and "1.51k" not in page
    result = owner_client.get(f"/api/v1/runs/{run.pk}/").json()["result"]
    assert result == {
        "label": "", "partial": "", "source": "", "printed": None, "workload": None,
        "cpu": None, "cpu_us_per_io": None, "disk_util": [],  # fio's own view was not kept then either
    }  # fmt: skip


# ------------------------------------------------------------------ the API


def test_the_api_stores_each_result_or_those_named_and_says_which(owner_client, disk):
    text = GROUPS.read_text()
    dry = owner_client.post("/api/v1/import/", {"disk": disk.pk, "text": text, "dry_run": True},
                            content_type="application/json").json()  # fmt: skip
    labels = [entry["label"] for entry in dry["parsed"]]
    assert len(labels) == 2 and all(entry["duplicate_of"] is None for entry in dry["parsed"])
    picked = owner_client.post("/api/v1/import/", {"disk": disk.pk, "text": text, "results": [labels[1]]},
                               content_type="application/json")  # fmt: skip
    assert picked.status_code == 201, picked.content
    (stored,) = picked.json()["runs"]
    detail = owner_client.get(f"/api/v1/runs/{stored['id']}/").json()["result"]
    assert detail["label"] == labels[1] and detail["workload"]["rw"] == "randwrite"
    assert detail["printed"]["write"] == {"iops": "8192", "bw": "32.0MiB/s", "bw_alt": "33.6MB/s", "runtime": "125msec"}
    unknown = owner_client.post("/api/v1/import/", {"disk": disk.pk, "text": text, "results": ["group 9"]},
                                content_type="application/json")  # fmt: skip
    assert unknown.status_code == 400 and "no result labelled 'group 9'" in unknown.json()["text"][0]


def test_the_api_refuses_the_same_output_on_the_same_disk_with_409_and_the_first_run(owner_client, disk):
    body = {"disk": disk.pk, "text": NDISK.read_text()}
    first = owner_client.post("/api/v1/import/", body, content_type="application/json")
    assert first.status_code == 201
    run_id = first.json()["runs"][0]["id"]
    again = owner_client.post("/api/v1/import/", body, content_type="application/json")
    assert again.status_code == 409
    assert again.json()["duplicate_of"] == run_id and again.json()["run_url"].endswith(f"/api/v1/runs/{run_id}/")
    assert f"already stored on {disk} as run {run_id}" in again.json()["detail"]
    dry = owner_client.post("/api/v1/import/", body | {"dry_run": True}, content_type="application/json")
    assert dry.json()["parsed"][0]["duplicate_of"] == run_id
    assert Run.objects.count() == 1


def test_the_schema_documents_the_duplicate_refusal_and_the_results_parameter(owner_client):
    schema = owner_client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/import/"]["post"]
    assert "409" in operation["responses"]
    body = schema["components"]["schemas"]["ImportRequest"]["properties"]
    assert "results" in body and "Default: every result" in body["results"]["description"]
    assert "printed" in schema["components"]["schemas"]["RunResult"]["properties"]


# ------------------------------------------------------------------ in a browser, at desktop and phone width


def _browser_user(username: str):
    user = User.objects.create_user(username, password=PASSWORD)
    team = teams.place_new_user(user).team
    return DiskFactory(host__team=team, label="aix-data", target_path="/data/aix", disk_type="custom")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_person_checks_the_printed_figures_then_saves_and_sees_them_on_the_run_page(
    width, request, browser, live_server, screenshot
):
    tab = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    disk = _browser_user(f"checker-{width}")
    log_in(tab, live_server.url, f"checker-{width}", PASSWORD)
    tab.goto(f"{live_server.url}/import/?disk={disk.pk}")
    tab.get_by_label("Or paste the output").fill(NDISK.read_text())
    tab.get_by_role("button", name="Read the numbers").click()
    figures = tab.locator("#import-preview table.figures")
    figures.wait_for()
    total = figures.locator("tr.figure-total")
    assert total.locator(".printed").all_inner_texts() == ["20,030.0 IO/s", "80,119.94 KB/s"]
    assert total.locator(".converted").inner_text() == "= 78.24 MiB/s"
    box = figures.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= tab.viewport_size["width"]  # nothing cut off
    screenshot(f"{width}-confirmation", on=tab)
    tab.get_by_role("button", name="Save 1 result").click()
    tab.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert tab.locator("#total-iops").inner_text() == "20,030.0 IO/s"
    assert tab.locator("#result-figures tr.figure-total .converted").inner_text() == "= 78.24 MiB/s"
    status = tab.locator("#run-chart-status")
    wait_until(tab, "document.getElementById('run-chart-status').textContent.startsWith('Measured')")
    assert status.inner_text().startswith("Measured 20,030.0 IO/s")  # the chart's line too, not "20k"
    screenshot(f"{width}-run", on=tab)
    tab.go_back()
    tab.get_by_role("button", name="Save 1 result").click()  # Back, then Save again
    alert = tab.get_by_role("alert").first
    alert.wait_for()
    assert "already stored on this disk as run" in alert.inner_text()
    assert Run.objects.filter(disk=disk).count() == 1
    screenshot(f"{width}-duplicate", on=tab)
    assert tab.js_errors == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_person_picks_which_results_of_a_client_server_output_to_save_and_sees_an_excerpt_marked_partial(
    width, request, browser, live_server, screenshot
):
    tab = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    disk = _browser_user(f"picker-{width}")
    log_in(tab, live_server.url, f"picker-{width}", PASSWORD)
    tab.goto(f"{live_server.url}/import/?disk={disk.pk}")
    tab.get_by_label("Or paste the output").fill(CLIENTS.read_text())
    tab.get_by_role("button", name="Read the numbers").click()
    boxes = tab.locator('#import-preview input[name="pick"]')
    boxes.first.wait_for()
    assert [box.is_checked() for box in boxes.all()] == [True, True, True]
    tab.get_by_role("checkbox", name="client 2").uncheck()
    screenshot(f"{width}-clients", on=tab)
    tab.get_by_role("button", name="Save the ticked results").click()
    tab.wait_for_url(f"{live_server.url}/disks/{disk.pk}/")
    assert sorted(run.parameters["label"] for run in Run.objects.filter(disk=disk)) == ["All clients", "client 1"]
    tab.goto(f"{live_server.url}/import/?disk={disk.pk}")
    tab.get_by_label("Or paste the output").fill(EXCERPT)
    tab.get_by_role("button", name="Read the numbers").click()
    note = tab.locator("#import-preview .partial-note")
    note.wait_for()
    assert note.inner_text().startswith("Partial result:")
    box = note.bounding_box()
    assert box and box["x"] + box["width"] <= tab.viewport_size["width"]
    screenshot(f"{width}-excerpt", on=tab)
    assert tab.js_errors == []


@pytest.mark.django_db
def test_an_import_of_the_same_workload_as_a_profiles_runs_joins_that_profiles_chart_series(owner_client, disk):
    # The quick check (randread 4k QD16, 1 job) ran here; the pasted report states exactly that workload.
    quick = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    ran = RunFactory(disk=disk, profile=quick, profile_name=quick.name, succeeded=True, recorded=True)
    text = (FIXTURES / "fio-3.33-randread-qd16.txt").read_text()
    page = _text(_preview(owner_client, disk, text))
    assert f"Will be stored as {quick.name} (charted with this disk's runs of that profile" in page
    (run,) = importing.import_results(disk, text, name="pasted text")
    assert (run.profile_id, run.profile_name) == (quick.pk, quick.name)
    assert "charted with the runs of Quick check" in run.explanation
    series = owner_client.get(f"/disks/{disk.pk}/series.json", {"range": "all"}).json()["series"]
    (line,) = [s for s in series if s["profile"]["name"] == quick.name]
    assert len(line["iops"]["total"]["y"]) == 2, "the import and the profile's run are one series"
    assert ran.pk != run.pk
    # Another workload (a mixed 4k QD1 report) states no profile's workload here: a series of its own.
    (other,) = importing.import_results(disk, (FIXTURES / "fio-3.33-randrw.txt").read_text(), name="mixed")
    assert other.profile_id is None and other.profile_name == "randrw 4k QD1"


@pytest.mark.django_db
def test_a_team_with_one_disk_finds_it_chosen_on_the_import_form(owner_client, disk, host):
    page = owner_client.get("/import/").content.decode()
    assert re.search(rf'<option value="{disk.pk}"[^>]*selected', page), "the only disk is preselected"
    DiskFactory(host=host, label="second", target_path="/data/2")
    page = owner_client.get("/import/").content.decode()
    assert not re.search(r"<option value=\"\d+\"[^>]*selected", page), "with two disks, the person chooses"
