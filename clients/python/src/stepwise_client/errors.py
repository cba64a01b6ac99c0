"""Errors: every refusal of the server carries its stable error code."""

from __future__ import annotations


class StepwiseError(Exception):
    """The server refused a request: `code` is its stable error code (e.g.
    ``run_not_found``, ``stale_approval``, ``path_not_allowed``), `status` the
    HTTP status, `message` what it said."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message} (HTTP {status})")
        self.code = code
        self.message = message
        self.status = status


def raise_for(response) -> None:
    """Raises a :class:`StepwiseError` for a refused response (4xx, 5xx)."""
    if response.status_code < 400:
        return
    try:
        detail = response.json()["error"]
        code, message = detail["code"], detail["message"]
    except Exception:  # not the server's error body (a proxy's, say)
        code, message = "http_error", response.text[:500]
    raise StepwiseError(code, message, response.status_code)
