"""The API's hosts: CRUD, key scan and approval, connection test."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from audit import log as audit
from audit.models import AuditEvent
from jobs import addresses, ssh
from jobs.api.base import (
    PLACEHOLDER,
    JsonTypes,
    ModelSerializer,
    TeamScoped,
    TeamViewSet,
    checked_path,
    team_of,
)
from jobs.hosts import connecting
from jobs.models import Credential, Host, Membership
from jobs.models.names import name_taken


class HostSerializer(ModelSerializer):
    credential = TeamScoped(
        queryset=Credential.objects.all(),
        required=False,
        allow_null=True,
        help_text="A stored credential of the team; or give password / private_key for a new one.",
    )
    password = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=4096)
    private_key = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=65536)
    passphrase = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=4096)
    has_credential = serializers.SerializerMethodField()
    credential_kind = serializers.SerializerMethodField()
    secret = serializers.SerializerMethodField(help_text=f"'{PLACEHOLDER}' when a secret is stored; never the secret.")

    class Meta:
        model = Host
        fields = [
            "id", "name", "address", "port", "username", "site", "os", "enabled", "exclusive", "run_base_dir",
            "ndisk64_path", "credential", "has_credential", "credential_kind", "secret", "password", "private_key",
            "passphrase", "host_key_type", "host_key_fingerprint", "host_key_approved_at", "scanned_key_type",
            "scanned_key_fingerprint", "scanned_at", "created_at", "tunable", "cloud_metadata",
        ]  # fmt: skip
        read_only_fields = ["host_key_type", "host_key_fingerprint", "host_key_approved_at", "created_at"]

    def get_has_credential(self, host: Host) -> bool:
        return host.credential_id is not None

    @extend_schema_field(serializers.ChoiceField(choices=Credential.Kind.choices, allow_null=True))
    def get_credential_kind(self, host: Host) -> str | None:
        return host.credential.kind if host.credential_id and host.credential is not None else None

    def get_secret(self, host: Host) -> str:
        return PLACEHOLDER if host.credential_id else ""

    def validate_name(self, name: str) -> str:
        if name_taken(Host.objects.filter(team=team_of(self)), self.instance, name=name):
            raise serializers.ValidationError(f"Your team already has a host named {name!r}; choose another name.")
        return name

    def validate_address(self, address: str) -> str:
        try:
            return addresses.check(address)
        except addresses.AddressError as exc:
            raise serializers.ValidationError(str(exc)) from exc

    def validate_run_base_dir(self, base: str) -> str:
        return checked_path(base, field="run directory", home=True) if base else base

    def validate_ndisk64_path(self, path: str) -> str:
        return checked_path(path, field="ndisk64 path", command=True) if path else path

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        password, key, passphrase = (attrs.get(name) for name in ("password", "private_key", "passphrase"))
        if password and key:
            raise serializers.ValidationError({"password": "Give a password or a private key, not both."})
        if (password or key) and attrs.get("credential"):
            raise serializers.ValidationError({"credential": "Choose a stored credential or give a new secret."})
        if passphrase and not key:
            raise serializers.ValidationError({"passphrase": "A passphrase only applies to a private key."})
        if key:
            try:
                ssh.load_private_key(key, passphrase or None)
            except ssh.SSHError as exc:
                field = "passphrase" if "passphrase" in str(exc) else "private_key"
                raise serializers.ValidationError({field: f"{exc} Paste it again: secrets are never shown."}) from exc
        return attrs

    @transaction.atomic
    def save(self, **kwargs: Any) -> Host:
        data = self.validated_data
        password, key, passphrase = (data.pop(name, "") for name in ("password", "private_key", "passphrase"))
        before = self.instance.credential_id if self.instance else None
        host = super().save(team=team_of(self), **kwargs)
        if password or key:
            host.credential = self._new_credential(host, password, key, passphrase)
            host.save(update_fields=["credential"])
        if before is not None and host.credential_id != before:
            # As the host page records it: which credential the host logs in with now (never its secret).
            audit.record(host.team, self._user, AuditEvent.Action.HOST_CREDENTIAL_CHANGED, host,
                         credential=str(host.credential) if host.credential else None, via="api")  # fmt: skip
        return host

    @property
    def _user(self) -> Any:
        return self.context["request"].user

    def _new_credential(self, host: Host, password: str, key: str, passphrase: str) -> Credential:
        kind = Credential.Kind.PRIVATE_KEY if key else Credential.Kind.PASSWORD
        current = host.credential
        if current is not None and not current.hosts.exclude(pk=host.pk).exists():
            # The host's own credential: replace its secret rather than leave an orphan behind.
            credential, action = current, AuditEvent.Action.CREDENTIAL_CHANGED
            # Which parts were replaced, by name: a passphrase given, or an old one dropped with the old key.
            replaced = ["secret", "passphrase"] if passphrase or current.passphrase_token else ["secret"]
            details = {"kind_from": current.kind, "replaced": replaced}
            credential.kind = kind
        else:
            names = set(Credential.objects.filter(team=host.team).values_list("name", flat=True))
            name, number = f"{host.name} login"[:90], 1
            while name in names:
                number += 1
                name = f"{host.name[:80]} login {number}"
            credential = Credential(team=host.team, name=name, kind=kind)
            action, details = AuditEvent.Action.CREDENTIAL_CREATED, {}
        credential.set_secret(key or password, passphrase)
        credential.save()
        audit.record(host.team, self._user, action, credential, kind=kind, host=host.name, via="api", **details)
        return credential


class ApproveKeySerializer(JsonTypes, serializers.Serializer):
    fingerprint = serializers.CharField(help_text="The SHA256 fingerprint you compared with the host's own.")


class ScannedKeySerializer(serializers.Serializer):
    key_type = serializers.CharField()
    fingerprint = serializers.CharField()
    matches_approved = serializers.BooleanField(allow_null=True, help_text="null: no key approved yet.")
    message = serializers.CharField()


class ConnectionTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    message = serializers.CharField()
    output = serializers.CharField(allow_blank=True)


class HostViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Hosts and their SSH logins. Secrets are write-only; only owners change hosts."""

    serializer_class = HostSerializer
    change_role = Membership.Role.OWNER
    change_roles = {"test_connection": Membership.Role.MEMBER}
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Host.objects.none()
        return Host.objects.filter(team=self.team).select_related("credential")

    @extend_schema(request=None, responses={200: ScannedKeySerializer, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"], url_path="scan-key")
    def scan_key(self, request: Request, pk: str) -> Response:
        """Read the host's SSH key; compare its fingerprint with the host's own, then approve it."""
        host = self.get_object()
        try:
            key = connecting.scan_host_key(host)
        except ssh.SSHError as exc:
            raise ValidationError({"detail": f"Could not read the host key of {host.name}: {exc}"}) from exc
        matches = key.fingerprint == host.host_key_fingerprint if host.has_pinned_key else None
        message = (
            "Compare this fingerprint with the host's own (ssh-keygen -lf on it), then approve it."
            if matches is not False
            else "The host presents a DIFFERENT key from the approved one. Approve it only if you know why it "
            "changed (reinstall, new host); otherwise someone may be in between."
        )
        body = {
            "key_type": key.key_type,
            "fingerprint": key.fingerprint,
            "matches_approved": matches,
            "message": message,
        }
        return Response(ScannedKeySerializer(body).data)

    @extend_schema(request=ApproveKeySerializer, responses={200: HostSerializer})
    @action(detail=True, methods=["post"], url_path="approve-key")
    def approve_key(self, request: Request, pk: str) -> Response:
        """Pin the scanned key, only if its fingerprint is the one you compared."""
        host = self.get_object()
        body = ApproveKeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        connecting.approve_host_key(host, request.user, body.validated_data["fingerprint"])
        return Response(self.get_serializer(host).data)

    @extend_schema(request=None, responses={200: ConnectionTestSerializer})
    @action(detail=True, methods=["post"], url_path="test-connection")
    def test_connection(self, request: Request, pk: str) -> Response:
        """Log in over SSH with the pinned key and the stored credential, and look for fio."""
        result = connecting.connection_test(self.get_object(), request.user)
        return Response(ConnectionTestSerializer(result).data)
