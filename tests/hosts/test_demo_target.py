"""The demo target registration used by ./bw run and by the compose stack's `target` service."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Host, Run
from jobs.runs import queueing
from tests.builders import quick_profile, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _keys_dir(tmp_path, sshd):
    keys = tmp_path / "demo-keys"
    keys.mkdir()
    (keys / "id_ed25519").write_text(sshd.private_key)
    key = sshd.host_key
    (keys / "ssh_host_ed25519_key.pub").write_text(f"{key.key_type} {key.key_b64} root@target\n")
    return keys


def test_a_compose_style_target_is_registered_pinned_and_runs_a_benchmark(fio_installed, sshd, worker, tmp_path):
    keys = _keys_dir(tmp_path, sshd)
    (tmp_path / "target").mkdir()
    args = ["--address", sshd.address, "--port", str(sshd.port), "--username", sshd.username, "--name", "target",
            "--keys-dir", str(keys), "--run-base-dir", str(tmp_path / "runs"),
            "--target-path", str(tmp_path / "target")]  # fmt: skip
    call_command("demo_target", *args)
    call_command("demo_target", *args)  # idempotent: the compose web service runs it on every start
    host = Host.objects.get(name="target")
    assert Host.objects.filter(name="target").count() == 1 and host.disks.count() == 1
    assert host.host_key_fingerprint == sshd.host_key.fingerprint and host.host_key_approved_at
    run = wait_final(queueing.request_run(host.disks.get(), quick_profile(host.team, runtime_s=2)))
    assert run.state == Run.State.SUCCEEDED, run.explanation


ENTRYPOINT = Path(__file__).resolve().parent.parent.parent / "docker/target/entrypoint.sh"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_compose_targets_entrypoint_gives_a_host_benchweb_pins_and_benchmarks(
    fio_installed, password_user, worker, tmp_path
):
    # The script the `target` image runs, run here without Docker: a throwaway account stands in for `bench`.
    keys, port = tmp_path / "demo-keys", free_port()
    env = dict(os.environ, DEMO_KEYS=str(keys), TARGET_USER=password_user.name, TARGET_PORT=str(port),
               TARGET_LISTEN="127.0.0.1")  # fmt: skip
    sshd = subprocess.Popen(["sh", str(ENTRYPOINT)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert sshd.poll() is None, sshd.stderr.read().decode()
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the target's sshd did not listen"
            time.sleep(0.1)
        assert oct((keys / "host").stat().st_mode & 0o777) == "0o700"
        home = pwd.getpwnam(password_user.name).pw_dir
        call_command("demo_target", "--name", "target", "--address", "127.0.0.1", "--port", str(port),
                     "--username", password_user.name, "--keys-dir", str(keys), "--run-base-dir", f"{home}/runs",
                     "--target-path", f"{home}/target")  # fmt: skip
        disk = Host.objects.get(name="target").disks.get()
        run = wait_final(queueing.request_run(disk, quick_profile(disk.team, runtime_s=2)))
        assert run.state == Run.State.SUCCEEDED, run.explanation
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


def test_unreadable_keys_are_refused_with_the_directory_named(db, tmp_path):
    with pytest.raises(CommandError, match=f"cannot read the demo target's keys in {tmp_path}"):
        call_command("demo_target", "--port", "22", "--keys-dir", str(tmp_path), "--run-base-dir", "/r",
                     "--target-path", "/t")  # fmt: skip
    with pytest.raises(CommandError, match="give --workdir, or all of"):
        call_command("demo_target", "--port", "22", "--keys-dir", str(tmp_path))
