"""Canary secrets through the whole product, then a search of everything a person or a process can read.

A canary password (a throwaway account on a password-only sshd) and a canary private key with a canary
passphrase (an encrypted ed25519 key) are registered through the pages and the API, used by real fio runs
that a real Celery worker starts over SSH, by connection tests and host-key scans. Afterwards no page, API
response, log line (this process and the worker's log), Celery result or message in Redis, nor any row of
any database table holds one of them in plaintext. Creating an account with a password needs root, as the
SSH password test does (CI runs as root).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from jobs import sshd_local
from jobs.models import Disk, Host, Membership, Profile, Run
from jobs.teams import membership as teams
from tests.builders import quick_profile, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSPHRASE = "canary-passphrase-Qm4t7w"


def _encrypted_key(workdir: Path) -> tuple[str, str]:
    path = workdir / "id_canary"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-C", "canary", "-f", str(path)],
                   check=True)  # fmt: skip
    return path.read_text(), (workdir / "id_canary.pub").read_text()


def _key_canaries(private_key: str) -> list[str]:
    """Every line of the key file's body: any one of them found anywhere is a leak."""
    return [line for line in private_key.strip().splitlines() if not line.startswith("-----")]


def _approve_in_the_pages(browser: Client, host: Host) -> None:
    assert browser.post(f"/hosts/{host.pk}/scan-key").status_code == 302
    host.refresh_from_db()
    approved = browser.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": host.scanned_key_fingerprint})
    assert approved.status_code == 302
    host.refresh_from_db()
    assert host.has_pinned_key


def _redis_text(url: str) -> str:
    """Every key and value in the broker's Redis: task messages, results, anything Celery kept."""
    assert url.startswith("redis+socket://"), url
    client = redis.Redis(unix_socket_path=url.removeprefix("redis+socket://"))
    parts = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        if kind == "string":
            values = [client.get(key)]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "hash":
            values = [item for pair in client.hgetall(key).items() for item in pair]
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "zset":
            values = client.zrange(key, 0, -1)
        else:
            values = []
        parts.append(key.decode(errors="replace"))
        parts += [v.decode(errors="replace") for v in values if v is not None]
    return "\n".join(parts)


def _database_text() -> str:
    """Every column of every row of every table, as text."""
    parts = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608  (a table name)
            for row in cursor.fetchall():
                for value in row:
                    if isinstance(value, memoryview | bytes):
                        value = bytes(value).decode(errors="replace")
                    parts.append(str(value))
    return "\n".join(parts)


def test_a_canary_password_key_and_passphrase_appear_nowhere_in_plaintext(
    fio_installed, password_user, worker, broker, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)
    private_key, public_key = _encrypted_key(tmp_path)
    server = sshd_local.start_sshd(tmp_path / "server", authorized_keys=[public_key], password_authentication=True)
    try:
        owner = User.objects.create_user("olga", password="a-long-test-password-1")
        teams.place_new_user(owner)
        team = Membership.objects.get(user=owner).team
        browser = Client()
        browser.force_login(owner)

        # The password: a host registered in the pages, its key approved there, its connection tested there.
        home = Path(f"/home/{password_user.name}")
        created = browser.post("/hosts/new/", {
            "name": "by-password", "address": server.address, "port": str(server.port),
            "username": password_user.name, "os": "linux", "site": "", "enabled": "on",
            "run_base_dir": str(home / "runs"), "ndisk64_path": "", "credential_mode": "new",
            "new_credential_kind": "password", "new_credential_name": "", "private_key": "",
            "password": password_user.password, "passphrase": "",
        })  # fmt: skip
        assert created.status_code == 302, created.content.decode()[:2000]
        by_password = Host.objects.get(name="by-password")
        _approve_in_the_pages(browser, by_password)
        tested = browser.post(f"/hosts/{by_password.pk}/test/")
        assert "Connected and logged in" in tested.content.decode()

        # The key and its passphrase: a host registered through the API with a token.
        token = browser.post("/api/v1/tokens/", json.dumps({"name": "canary"}), content_type="application/json")
        api = Client(HTTP_AUTHORIZATION=f"Bearer {token.json()['token']}")

        def post(url: str, body: dict) -> dict:
            response = api.post(url, json.dumps(body), content_type="application/json")
            assert response.status_code in (200, 201), response.content
            return response.json()

        keyed = post("/api/v1/hosts/", {
            "name": "by-key", "address": server.address, "port": server.port, "username": "root",
            "private_key": private_key, "passphrase": PASSPHRASE, "run_base_dir": str(tmp_path / "runs"),
        })  # fmt: skip
        scanned = post(f"/api/v1/hosts/{keyed['id']}/scan-key/", {})
        post(f"/api/v1/hosts/{keyed['id']}/approve-key/", {"fingerprint": scanned["fingerprint"]})
        assert post(f"/api/v1/hosts/{keyed['id']}/test-connection/", {})["ok"] is True

        # Both secrets used by real runs, each started by the worker over SSH.
        profile = quick_profile(team, runtime_s=2)
        (tmp_path / "target").mkdir()
        subprocess.run(["install", "-d", "-o", password_user.name, str(home / "target")], check=True)
        disks = [
            Disk.objects.create(host=by_password, label="home", target_path=str(home / "target"), disk_type="custom",
                                spec_iops=1000),
            Disk.objects.create(host_id=keyed["id"], label="tmp", target_path=str(tmp_path / "target"),
                                disk_type="custom", spec_iops=1000),
        ]  # fmt: skip
        runs = [Run.objects.get(pk=post("/api/v1/runs/", {"disk": d.pk, "profile": profile.pk})["id"]) for d in disks]
        for run in runs:
            run = wait_final(run)
            assert run.state == Run.State.SUCCEEDED, run.explanation
        # A secret that no longer works says so on the run, without the secret.
        api.patch(f"/api/v1/hosts/{by_password.pk}/", json.dumps({"password": "canary-wrong-Vb2"}),
                  content_type="application/json")  # fmt: skip
        retried = post("/api/v1/runs/", {"disk": disks[0].pk, "profile": profile.pk})
        refused = wait_final(Run.objects.get(pk=retried["id"]))
        assert refused.state == Run.State.ERROR and "refused the login" in refused.explanation
    finally:
        server.stop()

    # Everything that can be read.
    keyed_host = Host.objects.get(name="by-key")
    page_urls = ["/", "/overview/", "/hosts/", "/profiles/", "/compare/", "/import/", "/audit/", "/schedules/",
                 "/account/tokens/", "/team/members/"]  # fmt: skip
    for host in (by_password, keyed_host):
        page_urls += [f"/hosts/{host.pk}/", f"/hosts/{host.pk}/edit/", f"/admin/jobs/host/{host.pk}/change/",
                      f"/admin/jobs/credential/{host.credential_id}/change/"]  # fmt: skip
    for disk in disks:
        page_urls += [f"/disks/{disk.pk}/", f"/disks/{disk.pk}/edit/", f"/disks/{disk.pk}/series.json"]
    for run in Run.objects.all():
        page_urls += [f"/runs/{run.pk}/", f"/runs/{run.pk}/raw", f"/runs/{run.pk}/progress.json"]
    owner.is_staff = owner.is_superuser = True
    owner.save()
    readable = [created.content.decode(), tested.content.decode()]
    for url in page_urls:
        response = browser.get(url)
        assert response.status_code == 200, url
        readable.append(response.content.decode())
    for resource in ("hosts", "disks", "profiles", "runs", "schedules", "tokens", "members", "teams"):
        readable.append(api.get(f"/api/v1/{resource}/").content.decode())
    for host in (by_password, keyed_host):
        readable.append(api.get(f"/api/v1/hosts/{host.pk}/").content.decode())
    for run in Run.objects.all():
        readable.append(api.get(f"/api/v1/runs/{run.pk}/").content.decode())
    sources = {
        "pages and API responses": "\n".join(readable),
        "this process's log records": "\n".join(r.getMessage() for r in caplog.records) + caplog.text,
        "the worker's log": worker.log.read_text(errors="replace"),
        "Redis (messages and Celery results)": _redis_text(broker),
        "the database": _database_text(),
    }
    assert Profile.objects.filter(pk=profile.pk).exists() and len(sources["the worker's log"]) > 1000
    canaries = [password_user.password, "canary-wrong-Vb2", PASSPHRASE, *_key_canaries(private_key)]
    for where, text in sources.items():
        for canary in canaries:
            assert canary not in text, f"a secret ({canary[:6]}…) is readable in {where}"
