"""Sets of runs through the API (jobs/sets/api.py): a sweep started, listed, read with its plan, members and
result (its curves drawn again under other knee thresholds), cancelled, and its points as CSV; the refusals
name their field; viewers read only; another team's sets are out of reach. Members end through the state machine
(tests/sets/sweeps.py), without a worker or fio."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.exceptions import ValidationError

from jobs.api.models import ApiToken
from jobs.models import Membership, Run, RunSet
from jobs.runs import states
from jobs.sets import advancing, requesting
from tests.factories import ProfileFactory
from tests.openapi import json_schema
from tests.sets.sweeps import fail, members, run_sweep, succeed, sweep_profile
from tests.world import add_member, client_for, make_world, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def ours():
    return make_world("ours")


@pytest.fixture
def api(ours):
    return client_for(ours[1])


def sweep(disk, **fields) -> RunSet:
    """A sweep requested on disk (its first point claimed), of a sweep profile made with `fields`."""
    return requesting.request_sweep(disk, sweep_profile(disk.team, **fields))


def ended_sweep(disk, django_capture_on_commit_callbacks) -> RunSet:
    """A QD 1/4/16 sweep whose points measured 1,000, 1,900 and 2,000 IOPS at p99 100, 150 and 400 µs: a knee at
    QD 4 under the default rule."""
    curve = [(1000, 100), (1900, 150), (2000, 400)]
    return run_sweep(disk, sweep_profile(disk.team), curve, django_capture_on_commit_callbacks)


def test_a_sweep_started_through_the_api_answers_its_plan_and_members_and_its_points_name_it(
    ours, api, django_capture_on_commit_callbacks
):
    world, _ = ours
    profile = sweep_profile(world.team, sweep_axes={"iodepth": "1,4", "block_size_bytes": "4k,64k"}, ramp_time_s=2)

    with django_capture_on_commit_callbacks():
        response = post(api, "/api/v1/sets/", {"disk": world.disk.pk, "profile": profile.pk})

    assert response.status_code == 201, response.content
    body = response.json()
    run_set = RunSet.objects.get(pk=body["id"])
    assert body["trigger"] == "api" and run_set.trigger == "api" and body["kind"] == "sweep"
    assert body["state"] == "running" and body["explanation"] == "running point 1 of 4"
    assert body["created_by"] == world.owner.username and body["points"] == 4
    assert body["created_at"].endswith("Z") or "+" in body["created_at"]
    assert body["plan"]["text"] == "4 points × (2 s ramp + 5 s) = 28 s"
    assert body["plan"]["axes"] == [{"field": "iodepth", "values": [1, 4]},
                                    {"field": "block_size_bytes", "values": [4096, 65536]}]  # fmt: skip
    assert [(m["index"], m["point"], m["state"]) for m in body["members"]] == [
        (0, {"iodepth": 1, "block_size_bytes": 4096}, "queued"),
        (1, {"iodepth": 1, "block_size_bytes": 65536}, "pending"),
        (2, {"iodepth": 4, "block_size_bytes": 4096}, "pending"),
        (3, {"iodepth": 4, "block_size_bytes": 65536}, "pending"),
    ]
    first = body["members"][0]
    assert first["point_text"] == "iodepth 1, block size 4k"
    assert first["url"] == f"http://testserver/api/v1/runs/{first['id']}/"
    assert all(m.trigger == "api" for m in members(run_set))
    # Until a point ends, the result holds the points with empty numbers, never a guess.
    assert [p["iops"] for p in body["result"]["points"]] == [None] * 4

    member = api.get(first["url"]).json()
    assert member["run_set"] == {"id": run_set.pk, "kind": "sweep", "index": 0,
                                 "point": {"iodepth": 1, "block_size_bytes": 4096},
                                 "url": f"http://testserver/api/v1/sets/{run_set.pk}/"}  # fmt: skip
    assert api.get(f"/api/v1/runs/{world.run.pk}/").json()["run_set"] is None


def test_a_profile_that_is_not_a_sweep_is_refused_naming_the_runs_endpoint(ours, api):
    world, _ = ours
    response = post(api, "/api/v1/sets/", {"disk": world.disk.pk, "profile": world.profile.pk})
    assert response.status_code == 400
    assert response.json() == {
        "profile": [
            "mine is neither a sweep (sweep_axes) nor a latency-target search (sla_target_us): POST it to "
            "/api/v1/runs/ to run it once."
        ]
    }
    assert not RunSet.objects.exists()


def test_a_sweep_over_the_teams_bound_is_refused_on_profile_with_nothing_written(ours, api):
    world, _ = ours
    world.team.sweep_bound_s = 60
    world.team.save()
    profile = sweep_profile(world.team, runtime_s=30, sweep_axes={"iodepth": "1-16 x2"})
    runs_before = Run.objects.count()

    response = post(api, "/api/v1/sets/", {"disk": world.disk.pk, "profile": profile.pk})

    assert response.status_code == 400
    (message,) = response.json()["profile"]
    assert "longer than the team's bound of 1 min: it fits with at most 2 points" in message
    assert not RunSet.objects.exists() and Run.objects.count() == runs_before


def test_the_running_points_profile_says_to_start_it_as_a_set(ours, api):
    world, _ = ours
    response = post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": sweep_profile(world.team).pk})
    assert response.status_code == 400
    assert "is a sweep: start it as one" in response.json()["profile"][0]
    assert "POST /api/v1/sets/" in response.json()["profile"][0]


def test_an_ended_sweep_shows_its_points_curves_and_knee_and_other_thresholds_move_the_knee(
    ours, api, django_capture_on_commit_callbacks
):
    world, _ = ours
    run_set = ended_sweep(world.disk, django_capture_on_commit_callbacks)
    first, second, _third = members(run_set)

    body = api.get(f"/api/v1/sets/{run_set.pk}/").json()

    assert body["state"] == "succeeded" and body["final"] is True
    assert body["explanation"] == "finished: 3 of 3 points succeeded"
    assert body["finished_at"] is not None
    result = body["result"]
    assert result == run_set.result
    assert [(p["iops"], p["p99_us"], p["p50_us"], p["p99_9_us"]) for p in result["points"]] == [
        (1000, 100, 50, 150), (1900, 150, 75, 225), (2000, 400, 200, 600)]  # fmt: skip
    (curve,) = result["curves"]
    assert curve["knee_text"] == "knee at QD 4: 1,900 IOPS, p99 150 µs"
    assert curve["knee"]["run"] == second.pk and result["rule"] == {"iops_growth": 0.1, "p99_growth": 0.5}

    # IOPS must level off within 2 %: from QD 4 to 16 they still grew 5 %, so the knee is no longer at QD 4.
    strict = api.get(f"/api/v1/sets/{run_set.pk}/?iops_growth=2&p99_growth=50").json()["result"]
    assert strict["rule"] == {"iops_growth": 0.02, "p99_growth": 0.5}
    assert strict["curves"][0]["knee"] is None
    assert strict["curves"][0]["knee_text"].startswith("no knee: IOPS still grew by 2 %")
    assert strict["points"] == result["points"]
    # p99 must more than triple beyond the knee; past QD 4 it rose from 150 to 400 µs only: a flat curve.
    tripled = api.get(f"/api/v1/sets/{run_set.pk}/?p99_growth=200").json()["result"]["curves"][0]
    assert tripled["knee"] is None
    assert (
        tripled["knee_text"]
        == "no knee: IOPS levelled off, but p99 never rose by more than 200 % beyond that: a flat curve"
    )
    run_set.refresh_from_db()
    assert run_set.result == result  # asking never changes what is stored
    assert first.pk in [p["run"] for p in result["points"]]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("iops_growth=ten", "iops_growth"),
        ("iops_growth=0", "iops_growth"),
        ("p99_growth=-5", "p99_growth"),
        ("p99_growth=5000", "p99_growth"),
        ("p99_growth=nan", "p99_growth"),
        ("iops_growth=10&iops_growth=20", "iops_growth"),
        ("iops_growth=", "iops_growth"),
        ("knee=4", "knee"),
    ],
)
def test_a_knee_threshold_that_is_not_a_percentage_is_refused_naming_it_and_the_fix(ours, api, query, field):
    world, _ = ours
    run_set = sweep(world.disk)
    response = api.get(f"/api/v1/sets/{run_set.pk}/?{query}")
    assert response.status_code == 400
    (message,) = response.json()[field]
    if field != "knee":
        assert f"Give {field} once, as a percentage from 0.1 to 1000" in message
    else:
        assert "it takes: iops_growth, p99_growth" in message


def test_cancel_ends_the_sweep_and_its_points_not_run_and_keeps_the_ended_ones(
    ours, api, django_capture_on_commit_callbacks
):
    world, _ = ours
    with django_capture_on_commit_callbacks():
        run_set = sweep(world.disk)
        first, *_ = members(run_set)
        succeed(first, 1000, 100)
        response = post(api, f"/api/v1/sets/{run_set.pk}/cancel/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["cancel_requested"] is True
    states = [m["state"] for m in body["members"]]
    assert states[0] == "succeeded" and all(s == "cancelled" for s in states[2:])
    assert body["result"]["points"][0]["iops"] == 1000


def test_the_list_is_newest_first_and_filters_by_disk_state_and_kind(ours, api, django_capture_on_commit_callbacks):
    world, _ = ours
    ended = ended_sweep(world.disk, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks():
        running = sweep(world.disk, name="second sweep")

    listing = api.get("/api/v1/sets/").json()
    assert [s["id"] for s in listing["results"]] == [running.pk, ended.pk]
    assert "next" in listing and "count" not in listing  # paged by cursor, as runs are
    assert "result" not in listing["results"][0] and listing["results"][0]["points"] == 3

    def ids(query: str) -> list[int]:
        response = api.get(f"/api/v1/sets/?{query}")
        assert response.status_code == 200, response.content
        return [s["id"] for s in response.json()["results"]]

    assert ids("state=succeeded") == [ended.pk]
    assert ids("state=succeeded&state=running") == [running.pk, ended.pk]
    assert ids(f"disk={world.disk.pk}&kind=sweep") == [running.pk, ended.pk]
    assert ids("kind=sla") == []
    assert ids(f"disk={world.disk.pk + 1000}") == []
    for query, field in (("state=finished", "state"), ("ordering=id", "ordering"), ("kind=", "kind")):
        refused = api.get(f"/api/v1/sets/?{query}")
        assert refused.status_code == 400 and set(refused.json()) == {field}, query


def test_viewers_read_sets_but_cannot_start_or_cancel_one(ours, django_capture_on_commit_callbacks):
    world, _ = ours
    with django_capture_on_commit_callbacks():
        run_set = sweep(world.disk)
    _, viewer = add_member(world, Membership.Role.VIEWER)

    assert viewer.get(f"/api/v1/sets/{run_set.pk}/").status_code == 200
    started = post(viewer, "/api/v1/sets/", {"disk": world.disk.pk, "profile": run_set.profile_id})
    cancelled = post(viewer, f"/api/v1/sets/{run_set.pk}/cancel/")

    assert started.status_code == cancelled.status_code == 403
    assert "Viewers can look but not change anything" in cancelled.json()["detail"]
    assert RunSet.objects.count() == 1
    run_set.refresh_from_db()
    assert not run_set.cancel_requested


def test_another_teams_sets_disks_and_profiles_are_out_of_reach(ours, django_capture_on_commit_callbacks):
    theirs, their_secret = make_world("theirs", password="their-canary-password")
    with django_capture_on_commit_callbacks():
        their_set = sweep(theirs.disk)
    api = client_for(ours[1])

    assert api.get(f"/api/v1/sets/{their_set.pk}/").status_code == 404
    assert post(api, f"/api/v1/sets/{their_set.pk}/cancel/").status_code == 404
    assert api.get(f"/api/v1/sets/{their_set.pk}/points.csv").status_code == 404
    assert api.get("/api/v1/sets/").json()["results"] == []
    mixed = post(api, "/api/v1/sets/", {"disk": theirs.disk.pk, "profile": their_set.profile_id})
    assert mixed.status_code == 400 and set(mixed.json()) == {"disk", "profile"}
    assert client_for(their_secret).get(f"/api/v1/sets/{their_set.pk}/").status_code == 200


def _csv(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_the_points_csv_has_a_row_a_point_with_its_axes_and_units_and_empty_cells_for_what_was_not_measured(
    ours, api, django_capture_on_commit_callbacks
):
    world, _ = ours
    with django_capture_on_commit_callbacks():
        run_set = sweep(world.disk, sweep_axes={"block_size_bytes": "4k,64k", "iodepth": "1,4"})
        first, second, third, fourth = members(run_set)
        succeed(first, 1000, 100)
        fail(second)
        succeed(third, 1800, 300)
        succeed(fourth, 1200, 900)
        advancing.advance(run_set.pk)

    response = api.get(f"/api/v1/sets/{run_set.pk}/points.csv")
    assert f"sweep-{run_set.pk}-points-data-" in response["Content-Disposition"]
    rows = _csv(response)

    assert list(rows[0]) == [
        "index", "block_size_bytes", "iodepth", "run_id", "state", "iops", "bw_bytes_per_s", "p50_us", "p99_us",
        "p99_9_us", "limit_iops", "burst_limit_iops", "run_url",
    ]  # fmt: skip
    assert [(r["index"], r["block_size_bytes"], r["iodepth"], r["run_id"], r["state"]) for r in rows] == [
        ("0", "4096", "1", str(first.pk), "succeeded"), ("1", "4096", "4", str(second.pk), "failed"),
        ("2", "65536", "1", str(third.pk), "succeeded"), ("3", "65536", "4", str(fourth.pk), "succeeded"),
    ]  # fmt: skip
    assert (rows[0]["iops"], rows[0]["bw_bytes_per_s"], rows[0]["p50_us"], rows[0]["p99_us"]) == (
        "1000", str(1000 * 4096), "50", "100")  # fmt: skip
    assert rows[0]["p99_9_us"] == "150"
    # A failed point measured nothing: its figures are empty, never 0.
    assert [rows[1][key] for key in ("iops", "bw_bytes_per_s", "p50_us", "p99_us", "p99_9_us")] == [""] * 5
    assert rows[0]["limit_iops"] == "4000"  # the world's disk promises 4,000 IOPS
    assert rows[3]["run_url"] == f"http://testserver/runs/{fourth.pk}/"


def test_the_points_csv_of_a_running_sweep_holds_the_points_so_far(ours, api, django_capture_on_commit_callbacks):
    world, _ = ours
    with django_capture_on_commit_callbacks():
        run_set = sweep(world.disk)
        succeed(members(run_set)[0], 1000, 100)
    rows = _csv(api.get(f"/api/v1/sets/{run_set.pk}/points.csv?format=csv"))
    assert [(r["iodepth"], r["state"], r["iops"]) for r in rows] == [
        ("1", "succeeded", "1000"), ("4", "queued", ""), ("16", "pending", "")]  # fmt: skip


def test_a_sweep_profile_is_made_through_the_profiles_api_with_its_plan_shown(ours, api):
    response = post(api, "/api/v1/profiles/", {
        "name": "qd curve", "rw": "randread", "runtime_s": 10, "ramp_time_s": 5, "size_bytes": 2**20,
        "sweep_axes": {"iodepth": "1-16 x2"}, "sweep_on_failure": "stop",
    })  # fmt: skip
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["sweep_axes"] == {"iodepth": "1-16 x2"} and body["sweep_on_failure"] == "stop"
    assert body["sweep_plan"] == {"count": 5, "seconds_per_point": 15, "total_s": 75,
                                  "text": "5 points × (5 s ramp + 10 s) = 1 min 15 s"}  # fmt: skip
    assert api.get(f"/api/v1/profiles/{ours[0].profile.pk}/").json()["sweep_plan"] is None

    changed = post(api, f"/api/v1/profiles/{body['id']}/", {"sweep_axes": {}}, method="patch")
    assert changed.status_code == 200 and changed.json()["sweep_plan"] is None


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        ({"iodepth": "1-100 x2"}, "iodepth"),
        ({"iodepth": "4"}, "at least two values"),
        ({"colour": "1,2"}, "colour"),
        ({"iodepth": "1,2", "jobs": "1,2", "read_percent": "0,100"}, "at most 2 axes"),
        ({"block_size_bytes": "4k,2M"}, "2M is larger than the base profile's file per job"),
    ],
)
def test_a_sweep_profile_the_plan_refuses_is_refused_on_sweep_axes_with_the_models_message(ours, api, axes, words):
    world, _ = ours
    draft = ProfileFactory.build(team=world.team, name="bad sweep", size_bytes=2**20, sweep_axes=axes)
    with pytest.raises(ValidationError) as expected:
        draft.clean()
    response = post(api, "/api/v1/profiles/", {"name": "bad sweep", "rw": "randread", "size_bytes": 2**20,
                                               "sweep_axes": axes})  # fmt: skip
    assert response.status_code == 400
    assert response.json() == {"sweep_axes": [expected.value.message_dict["sweep_axes"][0]]}
    assert words in response.json()["sweep_axes"][0]


def test_every_set_endpoint_is_in_the_openapi_schema(ours):
    world, _ = ours
    schema = client_for(ApiToken.issue(world.owner, world.team, "schema")[1]).get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/sets/"])
    assert "get" in paths["/api/v1/sets/{id}/"]
    assert "post" in paths["/api/v1/sets/{id}/cancel/"]
    assert "text/csv" in paths["/api/v1/sets/{id}/points.csv"]["get"]["responses"]["200"]["content"]
    detail = {p["name"] for p in paths["/api/v1/sets/{id}/"]["get"]["parameters"]}
    assert {"iops_growth", "p99_growth"} <= detail
    assert {"disk", "state", "kind"} <= {p["name"] for p in paths["/api/v1/sets/"]["get"]["parameters"]}
    assert "run_set" in schema["components"]["schemas"]["RunDetail"]["properties"]
    profile = schema["components"]["schemas"]["Profile"]["properties"]
    assert {"sweep_axes", "sweep_on_failure", "sweep_plan"} <= set(profile)


def test_a_latency_target_search_is_made_through_the_profiles_api_and_refused_with_the_models_message(ours, api):
    response = post(api, "/api/v1/profiles/", {
        "name": "p99 under 1 ms", "rw": "randread", "runtime_s": 10, "size_bytes": 2**20,
        "sla_percentile": "p99", "sla_target_us": 1000, "sla_max_runs": 6,
    })  # fmt: skip
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["sla_percentile"], body["sla_target_us"], body["sla_max_runs"]) == ("p99", 1000, 6)
    assert body["sweep_plan"] is None

    both = post(api, "/api/v1/profiles/", {"name": "both", "rw": "randread", "size_bytes": 2**20,
                                           "sweep_axes": {"iodepth": "1,2"}, "sla_target_us": 1000})  # fmt: skip
    assert both.status_code == 400
    assert "never two" in both.json()["sla_target_us"][0]


def test_sweeps_compare_through_the_api_and_a_bad_parameter_is_named(ours, api, django_capture_on_commit_callbacks):
    world, _ = ours
    profile = sweep_profile(world.team, name="QD sweep")
    other = world.disk.host.disks.create(label="new", target_path="/data/new", disk_type="custom")
    for i in range(5):
        run_sweep(world.disk, profile, [(1000 + i, 100), (1900 + i, 150), (2000 + i, 400)],
                  django_capture_on_commit_callbacks)  # fmt: skip
        run_sweep(
            other, profile, [(1000 + i, 100), (1520 + i, 150), (1600 + i, 400)], django_capture_on_commit_callbacks
        )

    found = api.get(f"/api/v1/sets/compare/?a_disk={world.disk.pk}&b_disk={other.pk}").json()

    assert found["profile"] == "QD sweep" and found["knee"]["verdict"] == "significant"
    assert [p["b"]["iops"] for p in found["points"]] == [1002, 1522, 1602]
    assert api.get(f"/api/v1/sets/compare/?a_disk={world.disk.pk}&b_disk=x").json() == {
        "b_disk": ["b_disk takes a disk's id, a whole number such as 3; got 'x'."]}  # fmt: skip
    assert "colour" in api.get("/api/v1/sets/compare/?colour=red").json()
    none = api.get(f"/api/v1/sets/compare/?a_disk={world.disk.pk}&b_disk={other.pk}&profile=other")
    assert none.status_code == 400 and "No finished sweep of 'other'" in none.json()["profile"][0]


def test_a_latency_target_searchs_detail_is_what_the_schema_says(ours, api, django_capture_on_commit_callbacks):
    """The detail of a search, its steps and its answer, validated against the OpenAPI schema's SetDetail."""
    import jsonschema
    from drf_spectacular.generators import SchemaGenerator

    world, _ = ours
    profile = ProfileFactory(team=world.team, name="p99 search", size_bytes=2**20, sla_target_us=1000, sla_max_runs=2)
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_set(world.disk, profile)
    for iops, p99 in ((4000, 1500), (2000, 600)):  # over the target unthrottled, then under it when capped
        with django_capture_on_commit_callbacks():
            step = members(run_set)[-1]
            step.refresh_from_db()
            if step.state == Run.State.PENDING:
                states.claim(step)
            succeed(step, iops, p99)
            advancing.advance(run_set.pk)
    body = api.get(f"/api/v1/sets/{run_set.pk}/").json()
    assert body["kind"] == "sla" and body["state"] == "succeeded", body["explanation"]
    assert [s["iops"] for s in body["result"]["steps"]] == [4000, 2000] and body["result"]["answer"]["iops"] == 2000
    assert body["members"][1]["point"]["rate_iops"] < 4000

    schema = json_schema(SchemaGenerator().get_schema(request=None, public=True))
    jsonschema.validate(body, {"$ref": "#/components/schemas/SetDetail", "components": schema["components"]})
