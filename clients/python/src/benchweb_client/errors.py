"""The one error the client shows a person: a one-line message and exit status 2 (could not run)."""

from __future__ import annotations

COULD_NOT_RUN = 2


class ClientError(Exception):
    def __init__(self, message: str, status: int = COULD_NOT_RUN) -> None:
        super().__init__(message)
        self.status = status


class Unavailable(ClientError):
    """benchweb did not answer, or a proxy in front of it said it is down (502, 503, 504): worth asking again."""
