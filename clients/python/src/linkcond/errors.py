"""What went wrong, in linkcond's own words."""

from __future__ import annotations

from typing import Optional


class LinkcondError(Exception):
    """Anything this client could not do; the message says what linkcond said, when it said something."""


class StartError(LinkcondError):
    """``linkcond run`` did not become ready.

    ``status`` is its exit status (negative: the signal that ended it; None: it was still running when the wait
    ran out and was stopped), ``stderr`` everything it wrote there.
    """

    def __init__(self, message: str, status: Optional[int], stderr: str) -> None:
        self.status = status
        self.stderr = stderr
        text = message
        if stderr.strip():
            text += "; its stderr:\n" + stderr.rstrip()
        super().__init__(text)


class ApiError(LinkcondError):
    """The control endpoint refused a request: ``status`` is the HTTP status, ``message`` the endpoint's answer."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.message = message
        super().__init__(f"{method} {path}: {status}: {message}")
