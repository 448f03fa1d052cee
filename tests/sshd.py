"""Pytest fixtures for a real OpenSSH server on a free port. Load with `from tests.sshd import *` in conftest.

`sshd` is one server for the whole session; `other_sshd` is a fresh one with a different host key;
`sshd_factory` starts more with any options. All log in as the user running the tests.
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from jobs import sshd_local
from jobs.ssh import HostKey, Target

__all__ = ["PasswordAccount", "TestSshd", "other_sshd", "password_user", "sshd", "sshd_factory", "sshd_target"]


@dataclass(frozen=True)
class TestSshd:
    __test__ = False  # a helper, not a test class

    handle: sshd_local.SshdHandle
    private_key: str
    public_key: str
    username: str

    @property
    def address(self) -> str:
        return self.handle.address

    @property
    def port(self) -> int:
        return self.handle.port

    @property
    def host_key(self) -> HostKey:
        return _pinnable(self.handle.host_key)

    def host_key_of_type(self, key_type: str) -> HostKey:
        return _pinnable(self.handle.host_keys[key_type])

    def target(self, **changes: Any) -> Target:
        target = Target(self.address, self.port, self.username, self.host_key, private_key=self.private_key)
        return replace(target, **changes)


def _pinnable(key: sshd_local.PublicKey) -> HostKey:
    return HostKey(key.key_type, key.key_b64, key.fingerprint)


def _require_sshd() -> None:
    if sshd_local.sshd_available():
        return
    reason = f"{sshd_local.SSHD} is missing: install openssh-server to run the SSH tests"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _start(workdir: Path, **options: Any) -> TestSshd:
    private_key, public_key = sshd_local.generate_user_key(workdir)
    handle = sshd_local.start_sshd(workdir / "server", authorized_keys=[public_key], **options)
    return TestSshd(handle, private_key, public_key, _current_user())


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestSshd]:
    _require_sshd()
    server = _start(tmp_path_factory.mktemp("sshd"))
    yield server
    server.handle.stop()


@pytest.fixture
def sshd_target(sshd: TestSshd) -> Target:
    return sshd.target()


@pytest.fixture
def sshd_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., TestSshd]]:
    """Start servers with `start_sshd` options (password_authentication, host_key_types...); all stop after."""
    _require_sshd()
    started: list[TestSshd] = []

    def start(**options: Any) -> TestSshd:
        server = _start(tmp_path_factory.mktemp("sshd-extra"), **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.handle.stop()


@pytest.fixture
def other_sshd(sshd_factory: Callable[..., TestSshd]) -> TestSshd:
    return sshd_factory()


@dataclass(frozen=True)
class PasswordAccount:
    name: str
    password: str


@pytest.fixture
def password_user() -> Iterator[PasswordAccount]:
    """A throwaway local account with a password, removed afterwards. Creating it needs root."""
    if os.geteuid() != 0:
        pytest.skip("creating a throwaway account with a password needs root")
    account = PasswordAccount(f"bwtest{secrets.token_hex(3)}", secrets.token_urlsafe(12))
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", account.name], check=True)
    try:
        subprocess.run(["chpasswd"], input=f"{account.name}:{account.password}\n", text=True, check=True)
        yield account
    finally:
        subprocess.run(["userdel", "--force", "--remove", account.name], check=False, capture_output=True)
