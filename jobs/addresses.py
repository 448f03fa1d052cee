"""A host's address: the one thing of a host a worker gives to the resolver and to paramiko (pure).

Only a host name of RFC 1123 labels or an IP literal is an address. Anything else (a space, a line feed, a
leading '-' an ssh command line would read as an option, '_', a label of more than 63 characters, which
Python's resolver call refuses with a UnicodeError instead of an OSError) never reaches the network. A bracketed
IPv6 address ("[2001:db8::10]", as in a URL) is accepted and stored without its brackets. As with jobs/paths.py,
the check runs where a value enters (model, form, API) and again before a worker connects, because an address
stored before this rule existed must still be refused with a message and not fail deep in the resolver.
"""

from __future__ import annotations

import ipaddress
import re

MAX_LENGTH = 253  # a DNS name's, without its trailing dot; the model field (255) holds any IPv6 literal too
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_SCOPE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # fe80::1%eth0: an interface name or number
EXPECTED = (
    "give a host name (letters, digits and '-' in labels separated by dots, e.g. bench-01.example.com) or an IP "
    "address (e.g. 192.0.2.10 or 2001:db8::10)"
)


class AddressError(ValueError):
    """An address no worker may connect to; the message names the field and says what to give instead."""


def _problem(value: str) -> str:
    """What is wrong with value as an address, or "" when it is one."""
    if not value:
        return "is empty"
    if value != value.strip():
        return "has spaces around it"
    if not value.isascii():
        try:
            ascii_name = value.encode("idna").decode("ascii")
        except UnicodeError:
            return "holds characters a host name cannot have"
        return f"is not in ASCII: write the name as the resolver knows it, '{ascii_name}'"
    if not value.isprintable():
        return "holds a control character (a line feed, tab or the like)"
    if ":" in value:
        address, _, scope = value.partition("%")
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return "is not an IPv6 address, and a host name cannot hold ':' (a port goes in the port field)"
        return "" if not scope or _SCOPE.fullmatch(scope) else "has a zone (after '%') that is not an interface name"
    name = value.removesuffix(".")
    if len(name) > MAX_LENGTH:
        return f"is longer than {MAX_LENGTH} characters"
    labels = name.split(".")
    if all(label.isdigit() for label in labels):
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            return "is not an IPv4 address (four numbers 0 to 255 without leading zeros)"
        return ""
    if labels[-1].isdigit():
        return "ends in a number, which makes it read as an IP address, not a name"
    for label in labels:
        if not _LABEL.fullmatch(label):
            why = _label_problem(label)
            return why if len(labels) == 1 else f"has the label '{label}', which {why}"
    return ""


def _label_problem(label: str) -> str:
    if not label:
        return "is empty (two dots in a row, or a dot at the start)"
    if len(label) > 63:
        return "is longer than 63 characters"
    if label.startswith("-") or label.endswith("-"):
        return "starts or ends with '-'"
    return "holds a character other than letters, digits and '-'"


def check(value: str) -> str:
    """The address to store and connect to (a bracketed IPv6 address without its brackets), or AddressError."""
    unbracketed = value[1:-1] if value.startswith("[") and value.endswith("]") and ":" in value else value
    problem = _problem(unbracketed)
    if problem:
        raise AddressError(f"The address {shown(value)} {problem}; {EXPECTED}.")
    return unbracketed


def shown(value: str) -> str:
    """The value with every control character escaped, short enough for a message."""
    escaped = value[:100].encode("unicode_escape").decode("ascii")
    return f"'{escaped}'" + ("…" if len(value) > 100 else "")
