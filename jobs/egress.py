"""Where benchweb may connect on a user's word (an alert channel's webhook or Apprise URL), judged by address.

- Never a cloud's metadata service or a link-local address (169.254.0.0/16, fe80::/10, AWS's fd00:ec2::254,
  Alibaba's 100.100.100.200, Azure's 168.63.129.16, and names such as metadata.google.internal): they hand out
  the machine's own credentials, so no setting opens them.
- Loopback, private, carrier-grade NAT, unspecified, multicast, reserved and documentation addresses only inside
  the networks the operator allows (BENCHWEB_CHANNEL_ALLOW_NETWORKS, empty by default).
- A name is judged by every address it resolves to (an IPv4 address carried inside an IPv6 one too), and
  `PinnedAdapter` makes `requests` connect to the very address judged, keeping the name for the Host header and
  for TLS (SNI and certificate checks): a name that resolves elsewhere a moment later (DNS rebinding) changes
  nothing.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util import connection

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network
SETTING = "BENCHWEB_CHANNEL_ALLOW_NETWORKS"

# Instance metadata and platform services, refused whatever the allow-list says.
METADATA_NETWORKS: tuple[tuple[Network, str], ...] = (
    (ip_network("169.254.0.0/16"), "a link-local address, where clouds serve instance metadata and credentials"),
    (ip_network("fe80::/10"), "a link-local address, where clouds serve instance metadata and credentials"),
    (ip_network("fd00:ec2::254/128"), "AWS's instance metadata service"),
    (ip_network("100.100.100.200/32"), "Alibaba Cloud's instance metadata service"),
    (ip_network("168.63.129.16/32"), "Azure's platform service (WireServer)"),
)
METADATA_NAMES = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.tencentyun.com", "metadata.platformequinix.com",
})  # fmt: skip
SHARED = ip_network("100.64.0.0/10")
NAT64 = ip_network("64:ff9b::/96")
PRIVATE = tuple(ip_network(network) for network in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))


class Refused(Exception):
    """An address or name benchweb will not connect to; the message says why and what would allow it."""


def parse_networks(items: Iterable[str]) -> list[Network]:
    """The allow-list's networks; a ValueError names the entry that is not one."""
    networks = []
    for item in items:
        try:
            networks.append(ip_network(item.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(
                f"{SETTING}: {item.strip()!r} is not a network; write e.g. 127.0.0.0/8,10.1.2.0/24,::1/128"
            ) from exc
    return networks


def judge(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why benchweb will not connect to this address, or None when it may."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1, for the allow-list too
    for candidate in (address, *_carried(address)):
        for network, what in METADATA_NETWORKS:
            if candidate in network:
                return f"{candidate} is {what}; benchweb never sends there, whatever {SETTING} says"
    for candidate in (address, *_carried(address)):
        if not _public(candidate) and not any(candidate in network for network in allowed):
            return (
                f"{candidate} is {_kind(candidate)}; to send there, set {SETTING} to allow it "
                f"(e.g. {SETTING}={ip_network(candidate)})"
            )
    return None


def resolve(host: str, port: int) -> list[Address]:
    """The addresses a host names, in the resolver's order: an address as written, or a name's DNS answers
    (socket.gaierror, an OSError, when there are none)."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    found: list[Address] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


def check_name(host: str) -> None:
    """Refuses the metadata services' names before anything is resolved."""
    if host.lower().rstrip(".") in METADATA_NAMES:
        raise Refused(f"{host} is a cloud's instance metadata service; benchweb never sends there")


def checked(host: str, port: int, allowed: Sequence[Network]) -> list[Address]:
    """The host's addresses, every one judged; Refused at the first one benchweb will not connect to."""
    check_name(host)
    addresses = resolve(host, port)
    for address in addresses:
        reason = judge(address, allowed)
        if reason:
            named = "" if _literal(host) is not None else f"{host} resolves to {address}: "
            raise Refused(named + reason)
    return addresses


class PinnedAdapter(HTTPAdapter):
    """A requests adapter that connects only to addresses `checked` allows, and to the one it checked."""

    def __init__(self, allowed: Sequence[Network], **kwargs: Any) -> None:
        self.allowed = tuple(allowed)
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        attributes = {"allowed": self.allowed}
        plain = type("PinnedHTTP", (_Pinned, HTTPConnection), attributes)
        tls = type("PinnedHTTPS", (_Pinned, HTTPSConnection), attributes)
        self.poolmanager.pool_classes_by_scheme = {
            "http": type("PinnedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": plain}),
            "https": type("PinnedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": tls}),
        }


class _Pinned(HTTPConnection):
    allowed: tuple[Network, ...] = ()

    def _new_conn(self) -> socket.socket:
        # self.host stays the name: the Host header, SNI and the certificate check use it; the socket goes to
        # an address judged here, never to a second, unchecked resolution.
        failure: Exception | None = None
        for address in checked(self.host, self.port or 0, self.allowed):
            try:
                return connection.create_connection(
                    (str(address), self.port or 0), self.timeout,
                    source_address=self.source_address, socket_options=self.socket_options,
                )  # fmt: skip
            except TimeoutError as exc:
                failure = ConnectTimeoutError(self, f"Connection to {self.host} ({address}) timed out.")
                failure.__cause__ = exc
            except OSError as exc:
                failure = NewConnectionError(self, f"Failed to establish a new connection to {address}: {exc}")
                failure.__cause__ = exc
        raise failure or NewConnectionError(self, f"{self.host} resolves to no address")


def _literal(host: str) -> Address | None:
    try:
        return ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _carried(address: Address) -> list[IPv4Address]:
    """IPv4 addresses an IPv6 address carries to another machine (6to4, Teredo, NAT64)."""
    if not isinstance(address, IPv6Address):
        return []
    carried = [address.sixtofour] if address.sixtofour else []
    carried += list(address.teredo or ())
    if address in NAT64:
        carried.append(IPv4Address(int(address) & 0xFFFFFFFF))
    return carried


def _public(address: Address) -> bool:
    return address.is_global and not address.is_multicast


def _kind(address: Address) -> str:
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address in SHARED:
        return "a carrier-grade NAT (shared) address"
    if address.is_reserved:
        return "a reserved address"
    if any(address in network for network in PRIVATE):
        return "a private address"
    return "not a public address"
