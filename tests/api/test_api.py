"""The REST API: tokens, team isolation, roles, runs, hosts, disks, profiles, schedules, imports, members."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import sshd_local
from jobs.api.models import ApiToken
from jobs.models import (
    Credential,
    Disk,
    Host,
    Invitation,
    Membership,
    Profile,
    Run,
    Schedule,
    Team,
)
from jobs.teams import membership as teams
from tests.factories import (
    DiskFactory,
    HostFactory,
    ProfileFactory,
    RunFactory,
    ScheduleFactory,
)
from tests.world import CANARY_PASSWORD, SUMMARY, World, add_member, client_for, make_world, post

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def ours() -> tuple[World, str]:
    return make_world("ours")


@pytest.fixture
def theirs() -> tuple[World, str]:
    return make_world("theirs", password="their-canary-password")


@pytest.fixture
def api(ours) -> Client:
    return client_for(ours[1])


# ----------------------------------------------------------------------------------------- tokens


def test_a_new_token_is_shown_once_and_only_its_hash_is_stored(ours):
    _, secret = ours
    api = client_for(secret)
    response = post(api, "/api/v1/tokens/", {"name": "ci"})
    assert response.status_code == 201
    secret = response.json()["token"]
    token = ApiToken.objects.get(pk=response.json()["id"])
    raw_secret = secret.split("_", 2)[2]
    assert token.hashed_secret == hashlib.sha256(raw_secret.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM api_apitoken")
        stored = repr(cursor.fetchall())
    assert raw_secret not in stored and secret not in stored
    listing = api.get("/api/v1/tokens/")
    assert listing.status_code == 200
    assert raw_secret not in listing.content.decode()
    assert "token" not in listing.json()["results"][0]
    assert client_for(secret).get("/api/v1/runs/").status_code == 200


def test_a_revoked_token_is_refused_with_401_and_says_so(ours):
    _, secret = ours
    api = client_for(secret)
    other = post(api, "/api/v1/tokens/", {"name": "to revoke"}).json()
    assert api.delete(f"/api/v1/tokens/{other['id']}/").status_code == 204
    response = client_for(other["token"]).get("/api/v1/hosts/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert ApiToken.objects.get(pk=other["id"]).revoked_at is not None


def test_an_expired_token_is_refused_with_401_and_says_so(ours):
    world, _ = ours
    token, secret = ApiToken.issue(world.owner, world.team, "old", expires_at=timezone.now() + timedelta(hours=1))
    assert client_for(secret).get("/api/v1/hosts/").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client_for(secret).get("/api/v1/hosts/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_a_wrong_or_missing_token_is_401(ours):
    _, secret = ours
    prefix = secret.split("_")[1]
    assert client_for(f"bw_{prefix}_not-the-secret").get("/api/v1/hosts/").status_code == 401
    assert client_for("nonsense").get("/api/v1/hosts/").status_code == 401
    anonymous = Client().get("/api/v1/hosts/")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"].startswith("Bearer")


def test_a_token_stops_working_when_its_user_leaves_the_team(ours):
    world, secret = ours
    assert client_for(secret).get("/api/v1/hosts/").status_code == 200
    world.membership.delete()
    response = client_for(secret).get("/api/v1/hosts/")
    assert response.status_code == 401
    assert "no longer" in response.json()["detail"]


def test_a_token_cannot_be_created_already_expired(api):
    response = post(api, "/api/v1/tokens/", {"name": "x", "expires_at": "2001-01-01T00:00:00Z"})
    assert response.status_code == 400
    assert "expires_at" in response.json()


def test_the_browser_session_works_and_its_writes_need_the_csrf_token(ours):
    world, _ = ours
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(world.owner)
    assert browser.get("/api/v1/disks/").status_code == 200
    refused = post(browser, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk})
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert Run.objects.count() == 1


def test_a_token_acts_in_its_own_team_even_when_the_user_is_in_another_one_too(ours, theirs):
    world, _ = ours
    them, _ = theirs
    # The user joined "ours" first: a session would act there; the token is for "theirs".
    Membership.objects.create(user=world.owner, team=them.team, role=Membership.Role.MEMBER)
    _, secret = ApiToken.issue(world.owner, them.team, "theirs")
    api = client_for(secret)
    assert [d["id"] for d in api.get("/api/v1/disks/").json()["results"]] == [them.disk.pk]
    series = api.get(f"/api/v1/disks/{them.disk.pk}/series/?range=all")
    assert series.status_code == 200, series.content
    assert series.json()["disk"]["id"] == them.disk.pk
    assert api.get(f"/api/v1/disks/{world.disk.pk}/series/").status_code == 404
    teams = {t["id"]: t for t in api.get("/api/v1/teams/").json()["results"]}
    assert teams[them.team.pk]["current"] and not teams[world.team.pk]["current"]
    assert teams[them.team.pk]["role"] == "member"


# ----------------------------------------------------------------------------------------- isolation


def detail_urls(ids: dict[str, int]) -> list[tuple[str, str]]:
    """(method, url) of every URL that names an object, for the objects of `ids`."""
    urls = []
    for resource, pk in ids.items():
        base = f"/api/v1/{resource}/{pk}/"
        urls += [("get", base), ("patch", base), ("delete", base)]
        if resource not in ("tokens", "teams", "members", "runs"):
            urls.append(("put", base))
    for action in ("scan-key", "approve-key", "test-connection"):
        urls.append(("post", f"/api/v1/hosts/{ids['hosts']}/{action}/"))
    urls.append(("get", f"/api/v1/disks/{ids['disks']}/series/"))
    urls += [("post", f"/api/v1/schedules/{ids['schedules']}/{a}/") for a in ("pause", "resume")]
    urls.append(("get", f"/api/v1/schedules/{ids['schedules']}/next-fires/"))
    urls.append(("post", f"/api/v1/runs/{ids['runs']}/cancel/"))
    urls += [("get", f"/api/v1/runs/{ids['runs']}/{a}/") for a in ("samples", "series")]
    return urls


LISTS = ["hosts", "disks", "profiles", "schedules", "runs", "tokens", "members", "teams"]


def test_another_teams_objects_are_404_on_every_url_and_absent_from_every_list(ours, theirs):
    world, secret = ours
    them, _ = theirs
    api = client_for(secret)
    for method, url in detail_urls(them.ids()):
        response = post(api, url, {"name": "x", "fingerprint": "SHA256:x"}, method=method)
        # Runs and teams cannot be edited or deleted, nor tokens edited: 405 says so without looking the object up.
        read_only = method in ("patch", "delete") and ("/teams/" in url or "/runs/" in url)
        read_only = read_only or (method == "patch" and "/tokens/" in url)
        assert response.status_code == (405 if read_only else 404), (method, url, response.content[:200])
    # Our own objects answer on the same URLs, so the 404s above are not a broken route.
    for method, url in detail_urls(world.ids()):
        if method == "get":
            assert api.get(url).status_code == 200, url
    theirs_ids = them.ids()
    for resource in LISTS:
        listed = {row["id"] for row in api.get(f"/api/v1/{resource}/").json()["results"]}
        assert theirs_ids[resource] not in listed, resource
        assert world.ids()[resource] in listed, resource
    filtered = api.get(f"/api/v1/runs/?disk={them.disk.pk}").json()
    assert filtered["results"] == []
    for resource in ("hosts", "disks", "profiles", "schedules"):
        assert Host.objects.filter(pk=them.host.pk).exists() and resource
    assert Schedule.objects.get(pk=them.schedule.pk).enabled
    assert Run.objects.get(pk=them.run.pk).state == Run.State.SUCCEEDED


def test_another_teams_ids_cannot_be_referenced_in_a_write(ours, theirs):
    world, secret = ours
    them, _ = theirs
    api = client_for(secret)
    run = post(api, "/api/v1/runs/", {"disk": them.disk.pk, "profile": world.profile.pk})
    assert run.status_code == 400 and "disk" in run.json()
    run = post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": them.profile.pk})
    assert run.status_code == 400 and "profile" in run.json()
    disk = post(api, "/api/v1/disks/", {"host": them.host.pk, "label": "x", "target_path": "/x", "disk_type": "custom"})
    assert disk.status_code == 400 and "host" in disk.json()
    host = post(api, "/api/v1/hosts/", {"name": "h", "address": "a", "username": "u", "credential": them.credential.pk})
    assert host.status_code == 400 and "credential" in host.json()
    schedule = post(api, "/api/v1/schedules/", {"name": "s", "cron": "0 3 * * *", "targets": [them.disk.pk],
                                                "profiles": [world.profile.pk]})  # fmt: skip
    assert schedule.status_code == 400 and "targets" in schedule.json()
    imported = post(api, "/api/v1/import/", {"disk": them.disk.pk, "text": "x"})
    assert imported.status_code == 400 and "disk" in imported.json()
    assert Run.objects.filter(disk=them.disk).count() == 1


# ----------------------------------------------------------------------------------------- roles


def test_viewers_read_everything_but_every_write_is_403_and_changes_nothing(ours):
    world, _ = ours
    _, viewer = add_member(world, Membership.Role.VIEWER)
    for resource in LISTS:
        assert viewer.get(f"/api/v1/{resource}/").status_code == 200, resource
    before = (Run.objects.count(), Host.objects.count(), Disk.objects.count(), Profile.objects.count(),
              Schedule.objects.count(), Membership.objects.count())  # fmt: skip
    writes = [
        ("post", "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk}),
        ("post", "/api/v1/hosts/", {"name": "h", "address": "a", "username": "u"}),
        ("post", "/api/v1/disks/", {"host": world.host.pk, "label": "x", "target_path": "/x"}),
        ("post", "/api/v1/profiles/", {"name": "p"}),
        (
            "post",
            "/api/v1/schedules/",
            {"name": "s", "cron": "0 3 * * *", "targets": [world.disk.pk], "profiles": [world.profile.pk]},
        ),
        ("post", "/api/v1/import/", {"disk": world.disk.pk, "text": (FIXTURES / "fio-3.33-randrw.json").read_text()}),
        ("post", "/api/v1/members/", {"user": "nobody", "role": "viewer"}),
    ] + [
        (method, url, {"name": "changed", "role": "owner"})
        for method, url in detail_urls(world.ids())
        if method != "get" and "/tokens/" not in url and "/teams/" not in url
    ]
    for method, url, data in writes:
        response = post(viewer, url, data, method=method)
        if response.status_code == 405:
            continue
        assert response.status_code == 403, (method, url, response.content[:200])
        assert "Viewers can look" in response.json()["detail"]
    after = (Run.objects.count(), Host.objects.count(), Disk.objects.count(), Profile.objects.count(),
             Schedule.objects.count(), Membership.objects.count())  # fmt: skip
    assert after == before
    world.schedule.refresh_from_db()
    assert world.schedule.enabled and world.schedule.name == "nightly"
    assert Run.objects.get(pk=world.run.pk).state == Run.State.SUCCEEDED


def test_members_change_disks_and_runs_but_only_owners_change_hosts_and_members(ours):
    world, _ = ours
    _, member = add_member(world, Membership.Role.MEMBER)
    host = post(member, f"/api/v1/hosts/{world.host.pk}/", {"name": "renamed"}, method="patch")
    assert host.status_code == 403 and "Only owners" in host.json()["detail"]
    assert post(member, "/api/v1/members/", {"user": "ours-owner", "role": "viewer"}).status_code == 403
    disk = post(member, f"/api/v1/disks/{world.disk.pk}/", {"label": "renamed"}, method="patch")
    assert disk.status_code == 200 and disk.json()["label"] == "renamed"
    assert post(member, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk}).status_code == 201


# ----------------------------------------------------------------------------------------- secrets


def test_canary_secrets_never_appear_in_any_response(ours, tmp_path):
    world, secret = ours
    api = client_for(secret)
    private_key, _ = sshd_local.generate_user_key(tmp_path)
    key_canary = private_key.strip().splitlines()[1]
    created = post(api, "/api/v1/hosts/", {"name": "keyed", "address": "127.0.0.1", "username": "u",
                                           "private_key": private_key})  # fmt: skip
    assert created.status_code == 201, created.content
    assert created.json()["has_credential"] and created.json()["secret"] == "••••"
    changed = post(api, f"/api/v1/hosts/{world.host.pk}/", {"password": "another-canary-pw"}, method="patch")
    assert changed.status_code == 200
    world.credential.refresh_from_db()
    assert world.credential.reveal_secret() == "another-canary-pw"
    bodies = [created.content, changed.content]
    for resource in LISTS:
        bodies.append(api.get(f"/api/v1/{resource}/").content)
    bodies += [api.get(url).content for method, url in detail_urls(world.ids()) if method == "get"]
    bodies.append(api.get(f"/api/v1/hosts/{created.json()['id']}/").content)
    bodies.append(api.get("/api/schema/").content)
    stored = [c.secret_token for c in Credential.objects.all()]
    for body in bodies:
        text = body.decode()
        for canary in (CANARY_PASSWORD, "another-canary-pw", key_canary, *stored):
            assert canary not in text


def test_a_bad_private_key_is_refused_on_its_field(api):
    response = post(api, "/api/v1/hosts/", {"name": "k", "address": "a", "username": "u", "private_key": "nope"})
    assert response.status_code == 400
    assert "private_key" in response.json()
    assert not Host.objects.filter(name="k").exists()


# ----------------------------------------------------------------------------------------- query counts


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(captured)


def _grow(world: World, first: int, last: int) -> None:
    """Objects number first..last-1 of every listed kind, each linked to the others as in real use."""
    for i in range(first, last):
        host = HostFactory(team=world.team, name=f"h{i}", address="a", username="u", credential=world.credential)
        disk = DiskFactory(host=host, label="d", target_path="/d", spec_iops=100)
        profile = ProfileFactory(team=world.team, name=f"p{i}")
        ScheduleFactory(team=world.team, name=f"s{i}", cron="0 1 * * *", targets=[disk], profiles=[profile])
        RunFactory(disk=disk, profile=profile, succeeded=True, created_by=world.owner)
        user = User.objects.create_user(f"{world.team.name}-u{i}")
        Membership.objects.create(user=user, team=world.team, role=Membership.Role.MEMBER)
        ApiToken.issue(world.owner, world.team, f"t{i}")
        # Teams list the user's teams: one more team of theirs each time.
        Membership.objects.create(user=world.owner, team=Team.objects.create(name=f"extra {i}"))


@pytest.mark.parametrize("resource", LISTS)
def test_a_list_makes_the_same_number_of_queries_for_3_and_30_objects(ours, resource, django_assert_max_num_queries):
    world, secret = ours
    api = client_for(secret)
    _grow(world, 0, 2)
    url = f"/api/v1/{resource}/?page_size=200"
    api.get(url)  # the token's first use records last_used_at (at most once a minute), not counted below
    few = _queries(api, url)
    _grow(world, 2, 29)
    with django_assert_max_num_queries(few):
        response = api.get(url)
    assert len(response.json()["results"]) >= 30
    assert _queries(api, url) == few


def test_lists_are_paginated_at_50_and_at_most_200(ours):
    world, secret = ours
    api = client_for(secret)
    Run.objects.bulk_create(RunFactory.build(disk=world.disk, failed=True) for _ in range(250))
    page = api.get("/api/v1/runs/").json()
    # Runs page by cursor, newest first, with no total (no COUNT over a team's millions of runs).
    assert "count" not in page and len(page["results"]) == 50 and page["next"] and page["previous"] is None
    seen = [r["id"] for r in page["results"]]
    while page["next"]:
        page = api.get(page["next"]).json()
        seen += [r["id"] for r in page["results"]]
    assert seen == sorted(Run.objects.filter(team=world.team).values_list("pk", flat=True), reverse=True)
    assert len(api.get("/api/v1/runs/?page_size=1000").json()["results"]) == 200
    assert api.get("/api/v1/disks/").json()["count"] == 1  # other lists keep their page numbers and total


# ----------------------------------------------------------------------------------------- runs


def test_a_run_is_triggered_listed_filtered_and_cancelled(ours):
    world, secret = ours
    api = client_for(secret)
    first = post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk})
    assert first.status_code == 201
    assert first.json()["trigger"] == "api" and first.json()["state"] == "queued"
    assert first.json()["created_by"] == world.owner.username
    second = post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk}).json()
    assert second["state"] == "pending"
    assert second["explanation"] == f"waiting: disk busy with run {first.json()['id']}"
    by_state = api.get("/api/v1/runs/?state=pending&state=queued").json()
    assert {r["id"] for r in by_state["results"]} == {first.json()["id"], second["id"]}

    def listed(query: object) -> int:
        return len(api.get("/api/v1/runs/", query).json()["results"])

    assert listed({"trigger": "api", "state": "succeeded"}) == 0
    assert listed({"host": world.host.pk, "profile": world.profile.pk}) == 3
    later = (timezone.now() + timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    assert listed({"finished_before": later}) == 1
    assert listed({"created_after": later}) == 0
    bad = api.get("/api/v1/runs/?state=sleeping&created_after=yesterday")
    assert bad.status_code == 400 and {"state", "created_after"} <= set(bad.json())
    cancelled = post(api, f"/api/v1/runs/{second['id']}/cancel/").json()
    assert cancelled["state"] == "cancelled" and cancelled["final"]


def test_the_runs_list_follows_the_runs_named_by_id(ours):
    world, secret = ours
    api = client_for(secret)
    started = [post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk}).json()["id"]
               for _ in range(3)]  # fmt: skip

    named = api.get("/api/v1/runs/", [("id", started[0]), ("id", started[2]), ("page_size", 200)])
    too_many = api.get("/api/v1/runs/", [("id", i) for i in range(1, 202)])
    not_a_number = api.get("/api/v1/runs/", {"id": "seven"})

    assert named.status_code == 200
    assert [r["id"] for r in named.json()["results"]] == [started[2], started[0]]  # newest first
    assert {"state", "final", "progress", "explanation"} <= set(named.json()["results"][0])
    assert too_many.status_code == 400 and "200" in str(too_many.json()["id"])
    assert not_a_number.status_code == 400 and set(not_a_number.json()) == {"id"}


EVERY_LIST = [*LISTS, "disk-types"]


@pytest.mark.parametrize("name", EVERY_LIST)
def test_every_list_refuses_an_ordering_it_does_not_take_instead_of_ignoring_it(api, name):
    answer = api.get(f"/api/v1/{name}/", {"ordering": "password"})

    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    (message,) = answer.json()["ordering"]
    assert "takes no 'ordering' parameter" in message and "Its order is fixed" in message
    assert "page_size" in message


def test_a_misspelt_filter_is_refused_with_the_parameters_the_list_takes(ours):
    world, secret = ours
    api = client_for(secret)
    samples = api.get(f"/api/v1/runs/{world.run.pk}/samples/", {"state": "failed"})
    misspelt = api.get("/api/v1/runs/", {"stat": "failed", "page_size": 5})
    known = api.get("/api/v1/runs/", {"state": "failed", "page_size": 5, "format": "json"})
    disks = api.get("/api/v1/disks/", {"host": world.host.pk, "hots": world.host.pk})

    assert misspelt.status_code == 400 and set(misspelt.json()) == {"stat"}
    assert "cursor, page_size, disk, host, profile, state, trigger" in misspelt.json()["stat"][0]
    assert known.status_code == 200 and known.json()["results"] == []
    assert disks.status_code == 400 and "It takes: page, page_size, host." in disks.json()["hots"][0]
    # The run filters belong to the runs list, not to a run's samples.
    assert samples.status_code == 400 and "It takes: page, page_size." in samples.json()["state"][0]


@pytest.mark.parametrize(
    ("url", "query", "field"),
    [
        ("/api/v1/hosts/", {"page_size": "-1"}, "page_size"),
        ("/api/v1/hosts/", {"page": "abc"}, "page"),
        ("/api/v1/hosts/", {"page": ""}, "page"),
        ("/api/v1/profiles/", {"page_size": ["5", "6"]}, "page_size"),
        ("/api/v1/runs/", {"page_size": "1e3"}, "page_size"),
        ("/api/v1/runs/", {"trigger": ""}, "trigger"),
        ("/api/v1/disks/1/series/", {"to": "2024-05-01"}, "to"),
        ("/api/v1/disks/1/series/", {"range": "custom", "from": "20240501"}, "from"),
    ],
)
def test_a_value_that_would_be_ignored_or_replaced_by_a_default_is_refused(ours, url, query, field):
    world, secret = ours
    answer = client_for(secret).get(url.replace("/1/", f"/{world.disk.pk}/"), query)

    assert answer.status_code == 400 and field in answer.json(), answer.content


def test_a_json_body_gives_booleans_and_option_values_the_types_the_schema_says(api, ours):
    world, _ = ours
    url = f"/api/v1/profiles/{world.profile.pk}/"

    word = post(api, url, {"direct": "yes"}, method="patch")
    number = post(api, url, {"extra_options": {"group_reporting": 1}}, method="patch")
    typed = post(api, url, {"direct": True, "extra_options": {"group_reporting": "1"}}, method="patch")

    assert word.status_code == 400 and "direct" in word.json()
    assert number.status_code == 400 and "extra_options" in number.json()
    assert typed.status_code == 200 and typed.json()["direct"] is True


def test_an_api_path_no_endpoint_matches_answers_json_not_a_page(api):
    answer = api.get("/api/v1/disks/1.5/series/")

    assert answer.status_code == 404 and "/api/docs/" in answer.json()["detail"]


def test_the_api_reads_json_bodies_and_says_so_to_a_form(api):
    answer = api.post("/api/v1/tokens/", {"name": "from a form"})

    assert answer.status_code == 415 and "multipart/form-data" in answer.json()["detail"]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_the_runs_list_renders_every_run_exactly_as_the_run_serializer_does(ours, settings, zone):
    from rest_framework.renderers import JSONRenderer

    from jobs.runs.api import RunSerializer

    settings.TIME_ZONE = zone
    world, secret = ours
    api = client_for(secret)
    post(api, "/api/v1/runs/", {"disk": world.disk.pk, "profile": world.profile.pk})  # by a user, queued
    fired = timezone.now().replace(microsecond=0)
    RunFactory(disk=world.disk, profile=world.profile, schedule=world.schedule, fire_time=fired,
               trigger=Run.Trigger.SCHEDULE, state=Run.State.SKIPPED, not_before=fired,
               explanation="skipped: missed", progress={"eta_s": 3, "read_iops": 12.5})  # fmt: skip
    listed = api.get("/api/v1/runs/?page_size=200").json()["results"]
    runs = Run.objects.filter(team=world.team).select_related("disk", "created_by").order_by("-created_at", "-pk")
    expected = json.loads(JSONRenderer().render(RunSerializer(runs, many=True).data))
    assert len(listed) == 3 and listed == expected
    assert [list(item) for item in listed] == [list(item) for item in expected]  # the same field order
    if zone != "UTC":
        assert listed[0]["created_at"].endswith("+05:30")


def test_a_run_shows_its_summary_and_samples(ours):
    world, secret = ours
    api = client_for(secret)
    detail = api.get(f"/api/v1/runs/{world.run.pk}/").json()
    assert detail["summary"] == SUMMARY
    assert "raw_output" not in detail
    samples = api.get(f"/api/v1/runs/{world.run.pk}/samples/").json()
    assert [s["t_s"] for s in samples["results"]] == [0.0, 1.0, 2.0]
    assert samples["results"][1]["read_iops"] == 3901.0
    series = api.get(f"/api/v1/runs/{world.run.pk}/series/")
    assert series.status_code == 200, series.content


def test_the_disk_series_is_the_charts_own_json(ours):
    world, secret = ours
    response = client_for(secret).get(f"/api/v1/disks/{world.disk.pk}/series/?range=all")
    assert response.status_code == 200
    body = response.json()
    assert body["runs"] == 1 and body["series"][0]["profile"]["name"] == "mine"
    bad = client_for(secret).get(f"/api/v1/disks/{world.disk.pk}/series/?range=fortnight")
    assert bad.status_code == 400 and "fortnight" in bad.json()["error"]


# ----------------------------------------------------------------------------------------- hosts and disks


def test_approving_a_key_that_was_not_scanned_is_refused_on_the_fingerprint(api, ours):
    world, _ = ours
    response = post(api, f"/api/v1/hosts/{world.host.pk}/approve-key/", {"fingerprint": "SHA256:abc"})
    assert response.status_code == 400
    assert "scan again" in response.json()["fingerprint"][0]


def test_a_host_key_is_scanned_and_approved_with_the_compared_fingerprint(api, ours, sshd):
    world, _ = ours
    Host.objects.filter(pk=world.host.pk).update(address=sshd.address, port=sshd.port)
    scanned = post(api, f"/api/v1/hosts/{world.host.pk}/scan-key/")
    assert scanned.status_code == 200, scanned.content
    fingerprint = scanned.json()["fingerprint"]
    assert fingerprint == sshd.host_key.fingerprint and scanned.json()["matches_approved"] is None
    approved = post(api, f"/api/v1/hosts/{world.host.pk}/approve-key/", {"fingerprint": fingerprint})
    assert approved.status_code == 200
    assert approved.json()["host_key_fingerprint"] == fingerprint
    tested = post(api, f"/api/v1/hosts/{world.host.pk}/test-connection/")
    # The canary password is wrong for this sshd: the test says the login failed, as a 200 with ok=false.
    assert tested.status_code == 200 and tested.json()["ok"] is False


def test_a_scan_of_an_unreachable_host_says_why(api, ours):
    world, _ = ours
    response = post(api, f"/api/v1/hosts/{world.host.pk}/scan-key/")
    assert response.status_code == 400
    assert "Could not read the host key of vm" in response.json()["detail"]


def test_a_disk_shows_its_limits_and_a_bad_spec_is_refused_on_its_field(api, ours):
    world, _ = ours
    disk = api.get(f"/api/v1/disks/{world.disk.pk}/").json()
    assert disk["limits"]["iops"] == 4000 and disk["limits_error"] is None
    bad = post(api, "/api/v1/disks/", {"host": world.host.pk, "label": "gp3", "target_path": "/g",
                                       "disk_type": "aws-gp3", "size": 10**9})  # fmt: skip
    assert bad.status_code == 400 and "size" in bad.json()
    block = post(api, "/api/v1/disks/", {"host": world.host.pk, "label": "dev", "target_path": "/dev/sdz",
                                         "kind": "block", "allow_destructive": True})  # fmt: skip
    assert block.status_code == 400 and "confirm_destructive" in block.json()
    duplicate = post(api, "/api/v1/disks/", {"host": world.host.pk, "label": "data", "target_path": "/x"})
    assert duplicate.status_code == 400
    types = api.get("/api/v1/disk-types/").json()
    assert types["count"] >= 2 and {"id", "label", "records"} <= set(types["results"][0])
    one = types["results"][0]["id"]
    assert api.get(f"/api/v1/disk-types/{one}/").json()["id"] == one
    assert api.get("/api/v1/disk-types/no-such-type/").status_code == 404


# ----------------------------------------------------------------------------------------- profiles and schedules


def test_presets_are_listed_and_read_only_and_team_profiles_are_crud(api, ours):
    world, _ = ours
    preset = Profile.objects.filter(builtin=True).first()
    assert preset is not None
    assert preset.pk in {p["id"] for p in api.get("/api/v1/profiles/?page_size=200").json()["results"]}
    refused = post(api, f"/api/v1/profiles/{preset.pk}/", {"name": "mine now"}, method="patch")
    assert refused.status_code == 403 and "read-only" in refused.json()["detail"]
    taken = post(api, "/api/v1/profiles/", {"name": preset.name})
    assert taken.status_code == 400 and "name" in taken.json()
    forbidden = post(api, "/api/v1/profiles/", {"name": "x", "extra_options": {"filename": "/etc/passwd"}})
    assert forbidden.status_code == 400 and "extra_options" in forbidden.json()
    created = post(api, "/api/v1/profiles/", {"name": "seq", "rw": "read", "block_size_bytes": 1 << 20})
    assert created.status_code == 201 and created.json()["writes"] is False
    pk = created.json()["id"]
    assert Profile.objects.get(pk=pk).team == world.team
    assert api.delete(f"/api/v1/profiles/{pk}/").status_code == 204
    in_use = api.delete(f"/api/v1/profiles/{world.profile.pk}/")
    assert in_use.status_code == 409 and "Nothing was deleted" in in_use.json()["detail"]


def test_a_schedule_is_validated_like_the_page_paused_resumed_and_previewed(api, ours):
    world, _ = ours
    bad = post(api, "/api/v1/schedules/", {"name": "b", "cron": "61 * * * *", "targets": [world.disk.pk],
                                           "profiles": [world.profile.pk]})  # fmt: skip
    assert bad.status_code == 400 and "cron" in bad.json()
    zone = post(api, "/api/v1/schedules/", {"name": "z", "cron": "0 3 * * *", "timezone": "Mars/Olympus",
                                            "targets": [world.disk.pk], "profiles": [world.profile.pk]})  # fmt: skip
    assert zone.status_code == 400 and "timezone" in zone.json()
    twice = post(api, "/api/v1/schedules/", {"name": "t", "cron": "0 3 * * *", "targets": [world.disk.pk],
                                             "profiles": [world.profile.pk, world.profile.pk]})  # fmt: skip
    assert twice.status_code == 400 and "profiles" in twice.json()
    # A preset that can run on this directory disk (the raw-device recipes cannot, and a schedule refuses them).
    preset = next(p for p in Profile.objects.filter(builtin=True) if world.disk.refusal_for(p) is None)
    created = post(api, "/api/v1/schedules/", {"name": "hourly", "kind": "interval", "interval_minutes": 60,
                                               "targets": [world.disk.pk], "profiles": [world.profile.pk, preset.pk],
                                               "blackouts": ["08:00-18:00"]})  # fmt: skip
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["profiles"] == [world.profile.pk, preset.pk] and body["next_fire_at"]
    paused = post(api, f"/api/v1/schedules/{body['id']}/pause/").json()
    assert paused["enabled"] is False and paused["next_fire_at"] is None
    resumed = post(api, f"/api/v1/schedules/{body['id']}/resume/").json()
    assert resumed["enabled"] is True and resumed["next_fire_at"]
    fires = api.get(f"/api/v1/schedules/{body['id']}/next-fires/?count=3").json()["fires"]
    assert len(fires) == 3
    assert [r["profile"] for r in fires[0]["runs"]] == [world.profile.pk, preset.pk]
    assert api.get(f"/api/v1/schedules/{body['id']}/next-fires/?count=500").status_code == 400
    renamed = post(api, f"/api/v1/schedules/{body['id']}/", {"name": "hourly2"}, method="patch")
    assert renamed.status_code == 200 and renamed.json()["profiles"] == [world.profile.pk, preset.pk]


# ----------------------------------------------------------------------------------------- import


def test_an_import_dry_run_stores_nothing_and_a_confirmed_one_stores_runs(api, ours):
    world, _ = ours
    text = (FIXTURES / "fio-3.33-randrw.json").read_text()
    dry = post(api, "/api/v1/import/", {"disk": world.disk.pk, "text": text, "dry_run": True})
    assert dry.status_code == 200, dry.content
    assert dry.json()["parsed"][0]["summary"]["tool"] == "fio" and dry.json()["runs"] == []
    assert Run.objects.filter(trigger=Run.Trigger.IMPORT).count() == 0
    with (
        open(FIXTURES / "ndisk_4proc_random_direct.txt", "rb") as ndisk,
        open(FIXTURES / "fio-3.33-randrw.json", "rb") as fio,
    ):
        stored = api.post("/api/v1/import/", {"disk": world.disk.pk, "files": [ndisk, fio], "tool": "auto"})
    assert stored.status_code == 201, stored.content
    runs = Run.objects.filter(trigger=Run.Trigger.IMPORT).order_by("pk")
    assert [r.parameters["tool"] for r in runs] == ["ndisk64", "fio"]
    assert [r["id"] for r in stored.json()["runs"]] == [r.pk for r in runs]


def test_unreadable_import_text_is_refused_on_its_field_and_nothing_is_stored(api, ours):
    world, _ = ours
    response = post(api, "/api/v1/import/", {"disk": world.disk.pk, "text": "a shopping list"})
    assert response.status_code == 400
    assert "pasted text" in response.json()["text"][0]
    assert post(api, "/api/v1/import/", {"disk": world.disk.pk}).status_code == 400
    assert not Run.objects.filter(trigger=Run.Trigger.IMPORT).exists()


# ----------------------------------------------------------------------------------------- members


def test_owners_invite_change_and_remove_members_but_not_the_last_owner(api, ours):
    world, _ = ours
    newcomer = User.objects.create_user("newcomer", email="New@Example.com")
    invited = post(api, "/api/v1/members/", {"user": "new@example.com", "role": "viewer"})
    assert invited.status_code == 202, invited.content
    assert invited.json()["invited"] == "new@example.com" and invited.json()["role"] == "viewer"
    assert not Membership.objects.filter(user=newcomer).exists()  # nobody joins without accepting
    # An unknown name gets the same answer: the API cannot be used to find out which accounts exist.
    unknown = post(api, "/api/v1/members/", {"user": "ghost@example.com", "role": "viewer"})
    assert unknown.status_code == 202
    assert unknown.json()["detail"].replace("ghost@", "new@") == invited.json()["detail"]
    pk = teams.accept(Invitation.objects.get(user=newcomer), newcomer).pk
    again = post(api, "/api/v1/members/", {"user": "newcomer", "role": "member"})
    assert again.status_code == 400 and "already" in again.json()["user"][0]
    changed = post(api, f"/api/v1/members/{pk}/", {"role": "member"}, method="patch")
    assert changed.status_code == 200 and changed.json()["role"] == "member"
    demote = post(api, f"/api/v1/members/{world.membership.pk}/", {"role": "viewer"}, method="patch")
    assert demote.status_code == 400 and "last owner" in demote.json()["role"][0]
    assert api.delete(f"/api/v1/members/{world.membership.pk}/").status_code == 400
    assert api.delete(f"/api/v1/members/{pk}/").status_code == 204
    assert not Membership.objects.filter(user=newcomer).exists()


def test_the_schema_and_the_docs_are_served_without_a_cdn(client):
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    assert "/api/v1/runs/{id}/cancel/" in schema.json()["paths"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    page = docs.content.decode()
    assert "cdn." not in page and "unpkg" not in page and "/static/drf_spectacular_sidecar/" in page


def test_the_command_prints_a_working_token_once(ours):
    world, _ = ours
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", world.owner.username, "--name", "cli", "--days", "7", stdout=out, stderr=err)
    secret = out.getvalue().strip()
    assert "not shown again" in err.getvalue()
    token = ApiToken.objects.get(name="cli")
    assert token.team == world.team and token.expires_at > timezone.now() + timedelta(days=6)
    assert client_for(secret).get("/api/v1/disks/").json()["count"] == 1


def test_a_running_runs_elapsed_time_and_eta_move_on_between_polls(ours):
    world, secret = ours
    started = timezone.now() - timedelta(seconds=7)
    stored = {"elapsed_s": 3.5, "eta_s": 6.5, "expected_s": 10, "read_iops": 61000.0}
    Run.objects.filter(pk=world.run.pk).update(state=Run.State.RUNNING, started_at=started, progress=stored,
                                               finished_at=None)  # fmt: skip
    browser = Client()
    browser.force_login(world.owner)
    for progress in (
        client_for(secret).get(f"/api/v1/runs/{world.run.pk}/").json()["progress"],
        browser.get(f"/runs/{world.run.pk}/progress.json").json()["progress"],
    ):
        assert 7.0 <= progress["elapsed_s"] < 9 and 1 < progress["eta_s"] <= 3.0
        assert progress["read_iops"] == 61000.0 and progress["expected_s"] == 10
    Run.objects.filter(pk=world.run.pk).update(state=Run.State.SUCCEEDED, finished_at=timezone.now())
    assert client_for(secret).get(f"/api/v1/runs/{world.run.pk}/").json()["progress"] == stored
