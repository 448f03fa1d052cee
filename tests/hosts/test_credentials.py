from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from jobs import crypto
from jobs.models import Credential

CANARY = "canary-Zq8v1-do-not-leak"
KEY_CANARY = "-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-key-material-Xy77\n-----END OPENSSH PRIVATE KEY-----\n"


def _raw_rows() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM jobs_credential")
        return repr(cursor.fetchall())


def test_a_secret_is_stored_only_as_ciphertext(team):
    credential = Credential(team=team, name="k", kind=Credential.Kind.PRIVATE_KEY)
    credential.set_secret(KEY_CANARY, passphrase=CANARY)
    credential.save()
    raw = _raw_rows()
    assert "canary-key-material" not in raw
    assert CANARY not in raw
    fresh = Credential.objects.get(pk=credential.pk)
    assert fresh.reveal_secret() == KEY_CANARY
    assert fresh.reveal_passphrase() == CANARY


def test_a_secret_is_never_part_of_its_text_form(credential):
    assert "hunter2" not in str(credential)
    assert "hunter2" not in repr(credential)


def test_the_admin_never_renders_a_stored_secret(credential, owner, client):
    owner.is_staff = owner.is_superuser = True
    owner.save()
    client.force_login(owner)
    page = client.get(f"/admin/jobs/credential/{credential.pk}/change/")
    assert page.status_code == 200
    assert b"hunter2-canary-password" not in page.content
    assert credential.secret_token.encode() not in page.content
    assert b'name="secret"' in page.content


def test_saving_the_admin_form_blank_keeps_the_stored_secret(credential, owner, client):
    owner.is_staff = owner.is_superuser = True
    owner.save()
    client.force_login(owner)
    response = client.post(
        f"/admin/jobs/credential/{credential.pk}/change/",
        {"team": credential.team_id, "name": "renamed", "kind": "password", "secret": "", "passphrase": ""},
    )
    assert response.status_code == 302
    credential.refresh_from_db()
    assert credential.name == "renamed"
    assert credential.reveal_secret() == "hunter2-canary-password"


def test_a_secret_written_under_another_key_says_how_to_recover(credential, settings):
    settings.FIELD_KEYS_FROM_ENV = True
    settings.FIELD_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(crypto.UndecryptableSecret, match="enter the secret again"):
        credential.reveal_secret()


def test_rotating_to_a_new_key_keeps_every_secret_readable_and_drops_the_old_key(credential, settings, tmp_path):
    old = settings.FIELD_KEYS[0]
    keys_file = tmp_path / "field_keys"
    keys_file.write_text(old + "\n")
    settings.FIELD_KEYS_FILE = keys_file
    settings.FIELD_KEYS_FROM_ENV = False
    old_token = credential.secret_token

    call_command("rotate_field_keys", "--new-key", stdout=io.StringIO())

    new_keys = keys_file.read_text().strip().split(",")
    assert len(new_keys) == 1 and new_keys[0] != old
    assert oct(keys_file.stat().st_mode & 0o777) == "0o600"
    assert crypto.keys() == new_keys  # this process reads the changed file by itself
    credential.refresh_from_db()
    assert credential.secret_token != old_token
    assert credential.reveal_secret() == "hunter2-canary-password"


def test_rotating_to_a_new_key_keeps_alert_channels_secrets_and_urls_readable(credential, settings, tmp_path, owner):
    from jobs.notify.channels import ChannelInput, save_channel

    keys_file = tmp_path / "field_keys"
    keys_file.write_text(settings.FIELD_KEYS[0] + "\n")
    settings.FIELD_KEYS_FILE, settings.FIELD_KEYS_FROM_ENV = keys_file, False
    settings.CHANNEL_ALLOW_NETWORKS = ["127.0.0.0/8"]
    url = "http://bench:s3cr3t-pw@127.0.0.1:9/hook"
    hook, secret = save_channel(None, ChannelInput(kind="webhook", url=url), team=credential.team, user=owner)
    chat, _ = save_channel(None, ChannelInput(kind="apprise", url="json://127.0.0.1:9/"), team=credential.team,
                           user=owner)  # fmt: skip

    call_command("rotate_field_keys", "--new-key", stdout=io.StringIO())

    settings.FIELD_KEYS = keys_file.read_text().strip().split(",")
    hook.refresh_from_db()
    chat.refresh_from_db()
    assert (hook.reveal_url(), hook.reveal_secret()) == (url, secret)
    assert chat.reveal_url() == "json://127.0.0.1:9/"


def test_rotation_refuses_to_edit_keys_that_come_from_the_environment(credential, settings):
    from django.core.management.base import CommandError

    settings.FIELD_KEYS_FROM_ENV = True
    with pytest.raises(CommandError, match="environment"):
        call_command("rotate_field_keys", "--new-key")


def test_a_new_key_put_first_in_the_environment_s_list_takes_over_after_rotation(credential, settings):
    settings.FIELD_KEYS_FROM_ENV = True
    new = Fernet.generate_key().decode()
    settings.FIELD_KEYS = [new, *settings.FIELD_KEYS]
    call_command("rotate_field_keys", stdout=io.StringIO())
    settings.FIELD_KEYS = [new]
    credential.refresh_from_db()
    assert credential.reveal_secret() == "hunter2-canary-password"


def test_rotation_names_a_secret_no_key_opens_leaves_it_as_it_was_and_rotates_the_others(
    credential, team, settings, tmp_path
):
    keys_file = tmp_path / "field_keys"
    keys_file.write_text(settings.FIELD_KEYS[0] + "\n")
    settings.FIELD_KEYS_FILE = keys_file
    settings.FIELD_KEYS_FROM_ENV = False
    lost = Credential.objects.create(
        team=team,
        name="lost",
        kind=Credential.Kind.PASSWORD,
        secret_token=Fernet(Fernet.generate_key()).encrypt(b"x").decode(),
    )
    out, err = io.StringIO(), io.StringIO()

    call_command("rotate_field_keys", "--new-key", stdout=out, stderr=err)

    assert f"credential {lost.pk} (lost (Password)) secret_token could not be decrypted" in err.getvalue()
    assert "enter its secret again" in err.getvalue()
    assert Credential.objects.get(pk=lost.pk).secret_token == lost.secret_token
    credential.refresh_from_db()
    assert credential.reveal_secret() == "hunter2-canary-password"
