"""What the host page's form posts: host db1 at 10.0.0.5 with a new private-key credential; a test passes the fields
it changes."""

from __future__ import annotations


def host_form_data(**changes) -> dict:
    data = {
        "name": "db1",
        "address": "10.0.0.5",
        "port": "22",
        "username": "bench",
        "os": "linux",
        "site": "",
        "enabled": "on",
        "run_base_dir": "",
        "ndisk64_path": "",
        "credential_mode": "new",
        "new_credential_kind": "private_key",
        "new_credential_name": "",
        "private_key": "",
        "password": "",
        "passphrase": "",
    }
    return data | changes
