"""Key rotation on a running stack (issue 28, item 3): `manage.py rotate_field_keys --new-key` is run as an operator
runs it, in a process of its own, while a real Celery worker and this test process (the web side) hold the old
key ring; and a credential written under a key that is gone ends its run with the reason instead of hanging.
Real sshd, fio, Redis and worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from cryptography.fernet import Fernet
from django.conf import settings as django_settings

from jobs.models import Disk, Membership, Run
from jobs.runs import queueing
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.stacks import Stack, final, free_port, running_stack, sign_up, stack_env
from tests.workers import ROOT, database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def key_file(settings, tmp_path) -> Path:
    """This test's own var/ with the session's key in var/field_keys, read by this process (the web side) and by
    the processes the test starts: rotating it leaves the session's keys alone."""
    var = tmp_path / "var"
    var.mkdir()
    path = var / "field_keys"
    path.write_text(",".join(django_settings.FIELD_KEYS) + "\n")
    path.chmod(0o600)
    settings.FIELD_KEYS_FILE = path
    settings.FIELD_KEYS_FROM_ENV = False
    return path


def _keys_from(path: Path) -> dict[str, str]:
    """The environment of a process whose keys come from `path` (as `./bw run` gives them): none in the
    environment, var/ pointing at the file's folder."""
    return {"BENCHWEB_VAR_DIR": str(path.parent), "BENCHWEB_FIELD_KEYS": "",
            "DJANGO_SECRET_KEY": django_settings.SECRET_KEY}  # fmt: skip


def _rotate(key_file: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DATABASE_URL=database_url(), **_keys_from(key_file))
    return subprocess.run([sys.executable, "manage.py", "rotate_field_keys", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _rotate_to_a_new_key(key_file: Path) -> None:
    old = key_file.read_text().strip()
    done = _rotate(key_file, "--new-key")
    assert done.returncode == 0, done.stderr
    assert "nothing to restart" in done.stdout
    assert key_file.read_text().strip() not in ("", old)  # the old key is gone from the ring


def test_a_worker_running_with_the_old_keys_runs_the_next_benchmark_after_a_rotation_without_a_restart(
    fio_installed, sshd, worker_factory, key_file, tmp_path
):
    worker = worker_factory(env=_keys_from(key_file))
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, runtime_s=1)
    # The worker has decrypted the credential with the key it started with.
    assert wait_final(queueing.request_run(disk, profile)).state == Run.State.SUCCEEDED

    _rotate_to_a_new_key(key_file)

    after = wait_final(queueing.request_run(disk, profile), timeout=60)
    assert after.state == Run.State.SUCCEEDED, after.explanation
    assert worker.process.poll() is None  # the same worker process, never restarted


def test_the_connection_test_works_after_a_rotation_in_the_process_that_held_the_old_keys(
    fio_installed, sshd, owner, owner_client, key_file
):
    team, host = team_with_host(sshd)  # its credential encrypted here, with the old key
    Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    owner_client.post("/team/switch", {"team": team.pk})
    assert owner_client.post(f"/api/v1/hosts/{host.pk}/test-connection/").json()["ok"] is True

    _rotate_to_a_new_key(key_file)

    api = owner_client.post(f"/api/v1/hosts/{host.pk}/test-connection/")
    assert api.status_code == 200 and api.json()["ok"] is True, api.content
    page = owner_client.post(f"/hosts/{host.pk}/test/")
    assert page.status_code == 200 and "fio is installed" in page.content.decode()


def test_a_run_whose_credential_no_key_decrypts_ends_with_the_reason_and_frees_its_disk(
    fio_installed, sshd, worker, owner, owner_client, tmp_path
):
    team, host = team_with_host(sshd)
    credential = host.credential
    # Written under a key that is no longer in the ring (a rotation without the key it was written with).
    credential.secret_token = Fernet(Fernet.generate_key()).encrypt(sshd.private_key.encode()).decode()
    credential.save()
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    profile = quick_profile(team, runtime_s=1)

    run = wait_final(queueing.request_run(disk, profile), timeout=45)

    assert run.state == Run.State.ERROR
    assert "cannot be decrypted" in run.explanation and "Nothing was sent to the host" in run.explanation
    assert "Enter its secret again" in run.explanation and "restore the key" in run.explanation
    assert not Run.objects.filter(disk=disk, state__in=Run.ACTIVE_STATES).exists()
    Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    owner_client.post("/team/switch", {"team": team.pk})
    api = owner_client.post(f"/api/v1/hosts/{host.pk}/test-connection/")
    assert api.status_code == 200 and api.json()["ok"] is False
    assert "cannot be decrypted" in api.json()["message"]
    page = owner_client.post(f"/hosts/{host.pk}/test/")
    assert page.status_code == 200 and "cannot be decrypted" in page.content.decode()
    credential.refresh_from_db()
    assert credential.secret_token  # kept as it was

    # Doing what the reason says (entering the secret again) is enough: the disk takes the next run.
    credential.set_secret(sshd.private_key)
    credential.save()
    assert wait_final(queueing.request_run(disk, profile)).state == Run.State.SUCCEEDED


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, f"manage.py {args[0]}: {done.stderr}"
    return done.stdout


def test_rotating_keys_on_a_running_bw_run_stack_needs_no_restart(fio_installed, sshd, tmp_path):
    """The issue's own check: `./bw run` (gunicorn, worker, beat, Redis) up, a run and a connection test done with
    the old key, `manage.py rotate_field_keys --new-key` as docs/operations/configuration.md says, then both again on
    the same processes."""
    var_dir, port = tmp_path / "var", free_port()
    url = f"http://127.0.0.1:{port}"
    env = stack_env(var_dir, port) | {"BENCHWEB_TICK_SECONDS": "1", "BENCHWEB_DEMO_TARGET": "0"}
    env.pop("BENCHWEB_FIELD_KEYS", None)
    with running_stack(var_dir, env) as process:
        sign_up(url, "olga", "a-long-test-password-1")
        stack = Stack(url, env, requests.Session(), requests.Session())
        stack.api.headers["Authorization"] = f"Bearer {_manage(env, 'create_api_token', 'olga').strip()}"
        host = stack.call("POST", "/api/v1/hosts/", 201, name="loopback", address=sshd.address, port=sshd.port,
                          username=sshd.username, private_key=sshd.private_key)  # fmt: skip
        scanned = stack.call("POST", f"/api/v1/hosts/{host['id']}/scan-key/")
        stack.call("POST", f"/api/v1/hosts/{host['id']}/approve-key/", fingerprint=scanned["fingerprint"])
        disk = stack.call("POST", "/api/v1/disks/", 201, host=host["id"], label="tmp",
                          target_path=target_dir(tmp_path), disk_type="custom")  # fmt: skip
        profile = stack.call("POST", "/api/v1/profiles/", 201, name="quick", tool="fio", rw="randread",
                             block_size_bytes=4096, iodepth=1, jobs=1, runtime_s=1, time_based=True,
                             ioengine="psync", direct=False, size_bytes=16 * 2**20)  # fmt: skip

        def run_and_test() -> None:
            run = stack.call("POST", "/api/v1/runs/", 201, disk=disk["id"], profile=profile["id"])
            assert final(stack, run["id"])["state"] == "succeeded"
            tested = stack.call("POST", f"/api/v1/hosts/{host['id']}/test-connection/")
            assert tested["ok"] is True, tested

        run_and_test()
        old = (var_dir / "field_keys").read_text()
        rotated = _manage(env, "rotate_field_keys", "--new-key")
        assert "nothing to restart" in rotated and (var_dir / "field_keys").read_text() != old
        run_and_test()
        assert process.poll() is None
