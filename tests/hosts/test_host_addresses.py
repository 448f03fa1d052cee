"""A host's address is a host name or an IP literal (jobs/addresses.py): refused otherwise by the API, the host
page and the model (so the admin), naming the field and the fix; and one stored before the rule existed is
refused with the same words by the key scan, the connection test and a run's connection, never a server error."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import addresses, ssh
from jobs.hosts import connecting
from jobs.models import Host
from tests.hosts.forms import host_form_data
from tests.world import make_world

ACCEPTED = {
    "bench-01.example.com": "bench-01.example.com",
    "localhost": "localhost",
    "vm1": "vm1",
    "example.com.": "example.com.",
    "xn--bcher-kva.example": "xn--bcher-kva.example",
    "192.0.2.10": "192.0.2.10",
    "2001:db8::10": "2001:db8::10",
    "::1": "::1",
    "fe80::1%eth0": "fe80::1%eth0",
    "[2001:db8::10]": "2001:db8::10",  # as in a URL: stored without the brackets
}
# Each refused address, and words of the refusal that say what is wrong with it.
REFUSED = {
    "a\x0bb": "control character",
    "a\nb": "control character",
    "a\tb": "control character",
    "a b": "other than letters, digits and '-'",
    " vm1": "spaces around it",
    "-oProxyCommand=id": "starts or ends with '-'",
    "host_1": "other than letters, digits and '-'",
    "a" * 64: "longer than 63 characters",
    "a..b": "is empty",
    ".": "is empty",
    "1.2.3": "not an IPv4 address",
    "999.1.1.1": "not an IPv4 address",
    "010.1.1.1": "not an IPv4 address",
    "host.123": "ends in a number",
    "bücher.example": "'xn--bcher-kva.example'",
    "[vm1]": "other than letters, digits and '-'",
    "vm1:22": "a port goes in the port field",
    "[::1": "cannot hold ':'",
    "fe80::1%eth0;id": "not an interface name",
    ("a" * 60 + ".") * 5: "longer than 253 characters",
}
FIX = "give a host name (letters, digits and '-' in labels separated by dots"


@pytest.mark.parametrize(("given_address", "stored"), ACCEPTED.items())
def test_host_names_and_ip_addresses_are_accepted_and_a_bracketed_ipv6_is_stored_bare(given_address, stored):
    assert addresses.check(given_address) == stored


@pytest.mark.parametrize(("address", "why"), REFUSED.items(), ids=[ascii(a)[:30] for a in REFUSED])
def test_anything_else_is_refused_saying_what_is_wrong_and_what_to_give(address, why):
    with pytest.raises(addresses.AddressError) as refused:
        addresses.check(address)
    assert why in str(refused.value) and FIX in str(refused.value)
    assert str(refused.value).startswith("The address ")


@settings(suppress_health_check=[HealthCheck.too_slow])  # the first draw loads Unicode's tables
@given(st.text(max_size=120) | st.from_regex(r"[a-z0-9.:\[\]%-]{0,80}", fullmatch=True))
def test_any_text_is_an_address_the_resolver_takes_or_a_refusal(text):
    # What the resolver call refused with a UnicodeError (a label over 63 characters, an empty one) was a 500.
    try:
        address = addresses.check(text)
    except addresses.AddressError:
        return
    assert address.isascii() and address.isprintable() and not address.startswith("-") and " " not in address
    address.encode("idna")


# --- where an address enters --------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("address", ["a\x0bb", "a\nb", "a b", "-oProxyCommand=id", "a" * 64])
def test_the_api_refuses_a_bad_address_on_its_field_and_stores_nothing(address):
    world, secret = make_world("ours")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = {"name": "new", "address": address, "username": "bench", "credential": world.credential.pk}
    created = api.post("/api/v1/hosts/", json.dumps(body), content_type="application/json")
    assert created.status_code == 400
    assert list(created.json()) == ["address"] and FIX in created.json()["address"][0]
    changed = api.patch(f"/api/v1/hosts/{world.host.pk}/", json.dumps({"address": address}),
                        content_type="application/json")  # fmt: skip
    assert changed.status_code == 400 and FIX in changed.json()["address"][0]
    assert list(Host.objects.values_list("name", "address")) == [("vm", "127.0.0.1")]


@pytest.mark.django_db
def test_the_api_stores_a_bracketed_ipv6_address_without_its_brackets():
    world, secret = make_world("ours")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = {"name": "v6", "address": "[2001:db8::10]", "username": "bench", "credential": world.credential.pk}
    response = api.post("/api/v1/hosts/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201 and response.json()["address"] == "2001:db8::10"
    assert Host.objects.get(name="v6").address == "2001:db8::10"


@pytest.mark.parametrize("address", ["a\x0bb", "-oProxyCommand=id", "a b"])
def test_the_host_page_refuses_a_bad_address_on_its_field_and_says_what_an_address_may_be(owner_client, address):
    form = owner_client.get("/hosts/new/").content.decode()
    assert "a host name (letters, digits and &#x27;-&#x27; in dot-separated labels" in form
    response = owner_client.post("/hosts/new/", host_form_data(address=address, credential_mode="none"))
    assert response.status_code == 200
    assert "in labels separated by dots, e.g. bench-01.example.com) or an IP address" in response.content.decode()
    assert not Host.objects.exists()


def test_the_host_page_stores_a_bracketed_ipv6_address_without_its_brackets(owner_client):
    response = owner_client.post("/hosts/new/", host_form_data(address="[::1]", credential_mode="none"))
    assert response.status_code == 302
    assert Host.objects.get(name="db1").address == "::1"


def test_the_model_refuses_a_bad_address_so_the_admin_does_too(host):
    host.address = "-oProxyCommand=id"
    with pytest.raises(ValidationError) as refused:
        host.full_clean()
    assert FIX in refused.value.message_dict["address"][0]


# --- an address stored before the rule ------------------------------------------------------------------------------

# Each once answered a scan with an HTML 500: the resolver call raised UnicodeError, or OverflowError for the port.
STORED_BEFORE = ["a" * 64, "a..b", "-oProxyCommand=id", "a\x0bb"]


@pytest.mark.parametrize("address", STORED_BEFORE, ids=[ascii(a)[:20] for a in STORED_BEFORE])
def test_scanning_the_key_of_a_host_stored_with_a_bad_address_says_so_in_the_api_and_the_page(owner_client, host,
                                                                                                address):  # fmt: skip
    Host.objects.filter(pk=host.pk).update(address=address)
    owner_client.raise_request_exception = False
    page = owner_client.post(f"/hosts/{host.pk}/scan-key", follow=True)
    assert page.status_code == 200
    assert "Correct it on the host&#x27;s edit page; nothing was sent." in page.content.decode()
    world, secret = make_world("ours")
    Host.objects.filter(pk=world.host.pk).update(address=address)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", raise_request_exception=False)
    scanned = api.post(f"/api/v1/hosts/{world.host.pk}/scan-key/")
    assert scanned.status_code == 400
    assert FIX in scanned.json()["detail"] and "Correct it on the host's edit page" in scanned.json()["detail"]


def test_scanning_a_host_stored_with_a_port_past_65535_says_so(owner_client, host):
    Host.objects.filter(pk=host.pk).update(port=70000)
    owner_client.raise_request_exception = False
    page = owner_client.post(f"/hosts/{host.pk}/scan-key", follow=True)
    assert page.status_code == 200 and "The port 70000 is not 1 to 65535" in page.content.decode()


def test_a_connection_test_and_a_runs_connection_to_a_bad_stored_address_say_so_and_connect_nowhere(host):
    Host.objects.filter(pk=host.pk).update(
        address="a" * 64, host_key_type="ssh-ed25519", host_key_b64="AAAA", host_key_fingerprint="SHA256:x"
    )
    host.refresh_from_db()
    tested = connecting.connection_test(host)
    assert not tested.ok and FIX in tested.message
    for connection in (lambda: connecting.connect(host), lambda: connecting.session(host).__enter__()):
        with pytest.raises(ssh.SSHError) as refused:
            connection()
        assert refused.value.reason == "bad_address" and FIX in str(refused.value)
