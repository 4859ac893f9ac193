"""Finding the linkcond binary and choosing a control token."""

from __future__ import annotations

import os
import secrets
import shutil
from typing import Mapping, Optional

from .errors import LinkcondError


def find_binary(binary: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> str:
    """The linkcond to run: ``binary`` if given, else ``$LINKCOND_BINARY``, else ``linkcond`` on ``PATH``."""
    environment = os.environ if env is None else env
    chosen = binary or environment.get("LINKCOND_BINARY")
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise LinkcondError(f"linkcond binary {chosen!r} is not an executable file"
                                + ("" if binary else " (from LINKCOND_BINARY)"))
        return chosen
    found = shutil.which("linkcond", path=environment.get("PATH"))
    if found is None:
        raise LinkcondError("linkcond is not on PATH; install it, or set LINKCOND_BINARY to the binary's path")
    return found


def new_token() -> str:
    """A random control token (256 bits), handed to linkcond in ``LINKCOND_CONTROL_TOKEN``."""
    return secrets.token_hex(32)


def child_environment(token: str, env: Optional[Mapping[str, str]]) -> dict[str, str]:
    """``env`` (default: this process's environment) with the control token set."""
    environment = dict(os.environ if env is None else env)
    environment["LINKCOND_CONTROL_TOKEN"] = token
    return environment
