"""What the CLI can fail with: one line on stderr and an exit code a script can test."""
from __future__ import annotations

import json

from homing.kube.client import KubeError

FAILED, USAGE, NOT_IN_SCOPE, NOT_FOUND, FORBIDDEN = 1, 2, 3, 4, 5


class CliError(Exception):
    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def _api_message(err: KubeError) -> str:
    try:
        return str(json.loads(err.body).get("message") or err.body)
    except (ValueError, AttributeError):
        return err.body.strip()


def from_api(err: KubeError, what: str) -> CliError:
    """The API server's refusal, in one line naming what was asked for."""
    message = " ".join(_api_message(err).split())[:300]
    if err.status == 404:
        return CliError(f"{what} not found", NOT_FOUND)
    if err.status in (401, 403):
        return CliError(f"no permission to read {what}: {message}", FORBIDDEN)
    return CliError(f"reading {what} failed: HTTP {err.status}: {message}")
