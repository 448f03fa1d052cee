"""The capacity benches count SSH logins per host from the sshd logs (bench/fleet.py `logins_in`), to check a worker
logs in once a host: a login is credited to the address its own connection reached, even when its client port was
used before by a connection to another address (ports come back over a long measurement)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import fleet  # noqa: E402  (bench/ is not a package)

sys.path.remove(str(BENCH))


def _connection(port: int, address: str) -> bytes:
    return f'sshd[1]: Connection from 127.0.0.1 port {port} on {address} port 22 rdomain ""\n'.encode()


def _login(port: int) -> bytes:
    return f"sshd[2]: Accepted publickey for bench from 127.0.0.1 port {port} ssh2: ED25519 SHA256:x\n".encode()


def test_a_login_is_its_own_connections_even_when_its_port_came_back_later() -> None:
    log = b"".join([
        _connection(40000, "127.1.0.1"), _connection(40001, "127.1.0.2"),  # two connections at once
        _login(40001), _login(40000),                                       # their logins, in either order
        _connection(40000, "127.1.0.3"),                                    # a probe reusing a port, no login
        _connection(40002, "127.1.0.3"), _login(40002),
    ])  # fmt: skip

    assert fleet.logins_in(log) == {"127.1.0.1": 1, "127.1.0.2": 1, "127.1.0.3": 1}


def test_a_login_whose_connection_is_not_in_the_log_is_counted_as_unknown() -> None:
    assert fleet.logins_in(_login(41000) + _connection(41000, "127.1.0.9")) == {"unknown": 1}
