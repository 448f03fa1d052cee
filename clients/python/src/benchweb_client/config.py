"""Where the client finds benchweb and its token: flags, then BENCHWEB_URL / BENCHWEB_TOKEN, then the config file
(TOML: `url = "..."`, `token = "..."`), by default $XDG_CONFIG_HOME/benchweb/client.toml. Each value remembers
where it came from, so an error can name the setting to fix without ever showing the token."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from benchweb_client.errors import ClientError

URL_ENV, TOKEN_ENV = "BENCHWEB_URL", "BENCHWEB_TOKEN"


def default_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "benchweb" / "client.toml"


@dataclass(frozen=True)
class Config:
    url: str
    token: str
    url_from: str  # "--url", "BENCHWEB_URL" or the config file's path
    token_from: str

    def __repr__(self) -> str:  # a traceback or a debug print never shows the token
        return f"Config(url={self.url!r}, url_from={self.url_from!r}, token_from={self.token_from!r})"


def _read_file(path: Path, explicit: bool) -> dict[str, str]:
    if not path.exists():
        if explicit:
            raise ClientError(f"config file {path} does not exist")
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ClientError(f"config file {path} cannot be read: {exc}") from exc
    unknown = sorted(set(data) - {"url", "token"})
    if unknown:
        raise ClientError(f"config file {path}: unknown key {unknown[0]!r} (it takes url and token)")
    return {key: str(value) for key, value in data.items()}


def load(url: str | None, token: str | None, config_path: str | None) -> Config:
    path = Path(config_path) if config_path else default_path()
    from_file = _read_file(path, explicit=bool(config_path))
    found_url, url_from = _pick(url, "--url", URL_ENV, from_file.get("url"), str(path))
    found_token, token_from = _pick(token, "--token", TOKEN_ENV, from_file.get("token"), str(path))
    if not found_url:
        raise ClientError(f"no benchweb address: set {URL_ENV} (e.g. http://127.0.0.1:8000), --url, or url in {path}")
    if not found_url.startswith(("http://", "https://")):
        raise ClientError(f"{url_from} is {found_url!r}: give the address with http:// or https://")
    if not found_token:
        raise ClientError(
            f"no API token: set {TOKEN_ENV} (make one on benchweb's API tokens page), --token, or token in {path}"
        )
    return Config(found_url.rstrip("/"), found_token.strip(), url_from, token_from)


def _pick(flag: str | None, flag_name: str, env: str, in_file: str | None, file_name: str) -> tuple[str, str]:
    if flag:
        return flag, flag_name
    if os.environ.get(env):
        return os.environ[env], env
    if in_file:
        return in_file, file_name
    return "", ""
