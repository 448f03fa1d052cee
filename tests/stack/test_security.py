"""The hardened surface: deploy checks under production settings, sign-in lockout, and a Content-Security-Policy
that every page satisfies in a real browser."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.imports import importing
from jobs.models import Disk, Host, Profile, Schedule
from jobs.teams import membership as teams

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE = ROOT / "tests/fixtures/fio-3.33-randrw.json"


def test_the_deploy_checks_are_clean_under_production_settings(tmp_path):
    env = dict(os.environ, BENCHWEB_VAR_DIR=str(tmp_path), BENCHWEB_BEHIND_TLS="1", BENCHWEB_DEBUG="0",
               DJANGO_SECRET_KEY=secrets.token_urlsafe(64), BENCHWEB_FIELD_KEYS="")  # fmt: skip
    env.pop("DATABASE_URL", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser tests' fixture, never in deployment
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "security." not in result.stdout + result.stderr


def test_without_tls_the_cookies_are_not_marked_secure_so_plain_http_still_works(settings):
    assert settings.SESSION_COOKIE_SECURE is False and settings.SECURE_SSL_REDIRECT is False


@pytest.mark.django_db
def test_repeated_wrong_passwords_lock_that_username_out_from_that_address_only():
    User.objects.create_user("alice", password="the-right-password-1")
    User.objects.create_user("bob", password="the-right-password-2")
    browser = Client()
    for _ in range(4):
        response = browser.post("/login/", {"username": "alice", "password": "wrong"})
        assert response.status_code == 200 and "correct username and password" in response.content.decode()
    assert browser.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 429  # the fifth
    locked = browser.post("/login/", {"username": "alice", "password": "the-right-password-1"})
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed sign-ins" in page and "alice" in page and "0:15:00" in page
    assert "_auth_user_id" not in browser.session
    # Another account from the same address is not locked out.
    other = browser.post("/login/", {"username": "bob", "password": "the-right-password-2"})
    assert other.status_code == 302 and browser.session["_auth_user_id"] == str(User.objects.get(username="bob").pk)


@pytest.mark.django_db
def test_a_successful_sign_in_resets_the_count():
    User.objects.create_user("carol", password="the-right-password-3")
    browser = Client()
    for _ in range(4):
        browser.post("/login/", {"username": "carol", "password": "wrong"})
    assert browser.post("/login/", {"username": "carol", "password": "the-right-password-3"}).status_code == 302
    browser.logout()
    for _ in range(4):
        browser.post("/login/", {"username": "carol", "password": "wrong"})
    assert browser.post("/login/", {"username": "carol", "password": "the-right-password-3"}).status_code == 302


@pytest.mark.django_db
def test_every_page_carries_the_content_security_policy(client):
    policy = client.get("/login/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy.split("style-src-attr")[0]  # only style attributes may be inline


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_pages_work_under_the_servers_own_csp_in_a_real_browser(page, live_server):
    owner = User.objects.create_user("olga", password="a-long-test-password-1")
    team = teams.place_new_user(owner).team
    host = Host.objects.create(team=team, name="vm1", address="10.0.0.1", username="bench")
    disk = Disk.objects.create(host=host, label="d1", target_path="/d1", disk_type="aws-gp3", size=500)
    run = importing.import_result(disk, FIXTURE.read_text(), name="imported 4k randrw")
    profile = Profile.objects.create(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    schedule = Schedule.objects.create(team=team, name="nightly", kind="cron", cron="30 2 * * *")
    schedule.targets.set([disk])
    schedule.scheduleprofile_set.create(profile=profile, position=0)
    client = Client()
    client.force_login(owner)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])  # fmt: skip
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    urls = ["/", "/overview/", "/hosts/", f"/hosts/{host.pk}/", f"/disks/{disk.pk}/", f"/runs/{run.pk}/",
            "/schedules/", "/schedules/new/", f"/schedules/{schedule.pk}/", "/schedules/calendar/", "/profiles/",
            "/profiles/new/", "/import/", f"/compare/?disks={disk.pk}", "/disk-types/"]  # fmt: skip
    for url in urls:
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == 200, url
        assert "script-src 'self'" in response.headers["content-security-policy"], url
        page.wait_for_load_state("networkidle")
    assert violations == []
    assert page.js_errors == []
