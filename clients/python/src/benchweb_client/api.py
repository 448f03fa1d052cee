"""Every call to benchweb goes through `Api.call`: one httpx client, the token in its header (never in a message),
and each failure turned into a one-line ClientError that says what to fix."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from benchweb_client import __version__
from benchweb_client.config import Config
from benchweb_client.contract import OPERATIONS
from benchweb_client.errors import ClientError, Unavailable

# A proxy's answers while benchweb behind it restarts.
UNAVAILABLE = (502, 503, 504)


class Api:
    def __init__(self, config: Config, timeout: float = 30.0) -> None:
        self.config = config
        self._http = httpx.Client(
            base_url=config.url,
            timeout=timeout,
            headers={"Authorization": f"Bearer {config.token}", "User-Agent": f"benchweb-client/{__version__}"},
        )

    def close(self) -> None:
        self._http.close()

    def page_url(self, run_id: int) -> str:
        return f"{self.config.url}/runs/{run_id}/"

    def call(
        self,
        name: str,
        ids: dict[str, int] | None = None,
        params: dict[str, Any] | list[tuple[str, Any]] | None = None,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        ok: tuple[int, ...] = (200, 201),
    ) -> httpx.Response:
        op = OPERATIONS[name]
        path = op.url(**(ids or {}))
        try:
            answer = self._http.request(op.method, path, params=params, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise Unavailable(
                f"benchweb at {self.config.url} did not answer {op.method} {path} in time ({exc})"
            ) from exc
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach benchweb at {self.config.url} ({exc}): is it running, and is {self.config.url_from} "
                "the right address?"
            ) from exc
        if answer.status_code in ok:
            return answer
        if answer.status_code in UNAVAILABLE:
            said = f"benchweb at {self.config.url} is unavailable ({answer.status_code})"
            raise Unavailable(f"{op.method} {path}: {said}")
        raise ClientError(self._refusal(op.method, path, answer))

    def json(self, name: str, **kwargs: Any) -> Any:
        answer = self.call(name, **kwargs)
        try:
            return answer.json()
        except ValueError as exc:
            raise ClientError(
                f"{self.config.url} answered {OPERATIONS[name].path} with something that is not JSON: is "
                f"{self.config.url_from} benchweb's address?"
            ) from exc

    def json_patiently(self, name: str, patience_s: float, retrying: Callable[[str], None], **kwargs: Any) -> Any:
        """As json, riding out benchweb being unavailable for up to patience_s (a restart, a proxy's 502): a poll
        during a wait must not end the wait, and leave the runs unwatched, for a blip. `retrying` hears each miss."""
        deadline, pause = time.monotonic() + patience_s, 1.0
        while True:
            try:
                return self.json(name, **kwargs)
            except Unavailable as exc:
                if time.monotonic() + pause > deadline:
                    raise ClientError(f"{exc}; gave up after {patience_s:g} s of retrying") from exc
                retrying(f"{exc}; retrying in {pause:g} s")
                time.sleep(pause)
                pause = min(2 * pause, 10.0)

    def every(self, name: str) -> list[dict[str, Any]]:
        """All the items of a paginated list, page after page."""
        found, page = [], 1
        while True:
            answer = self.json(name, params={"page": page, "page_size": 200})
            found += answer["results"]
            if not answer.get("next"):
                return found
            page += 1

    def _refusal(self, method: str, path: str, answer: httpx.Response) -> str:
        try:
            body = answer.json()
        except ValueError:
            body = None
        detail = body.get("detail") if isinstance(body, dict) else None
        status = answer.status_code
        if status == 401:
            return (
                f"benchweb refused the API token from {self.config.token_from} ({detail or 'not valid'}): set "
                f"{_setting(self.config.token_from)} to a valid token "
                "(make one on benchweb's API tokens page)"
            )
        if status == 403:
            return f"{method} {path}: not allowed for this token ({detail or 'forbidden'})"
        if status == 404 and body is None:
            return f"{self.config.url}{path} is not found: is {self.config.url_from} benchweb's address?"
        if isinstance(body, dict) and detail is None:
            fields = "; ".join(f"{key}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                               for key, v in body.items())  # fmt: skip
            return f"{method} {path} refused ({status}): {fields}"
        return f"{method} {path} refused ({status}): {detail or answer.text[:300]}"


def _setting(source: str) -> str:
    """The setting a person changes to fix a value from `source`: the flag or file itself, else the variable."""
    return source if source.startswith("--") or "/" in source else "BENCHWEB_TOKEN"
