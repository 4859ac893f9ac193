"""The control endpoint of a running linkcond: one HTTP request per call."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any, Callable, Dict, Optional

from .errors import ApiError, LinkcondError


class Control:
    """Sends requests to ``url`` with ``token``; ``on_failure`` explains a connection that could not be made
    (for instance that linkcond has exited) and returns the error to raise."""

    def __init__(self, url: str, token: str, timeout: float,
                 on_failure: Callable[[str, str, OSError], LinkcondError]) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or parsed.hostname is None or parsed.port is None:
            raise LinkcondError(f"unexpected control URL {url!r}: expected http://HOST:PORT")
        self.url = url
        self._host = parsed.hostname
        self._port = parsed.port
        self._token = token
        self._timeout = timeout
        self._on_failure = on_failure

    def request(self, method: str, path: str, body: str = "") -> str:
        """The answer's text; raises ApiError with the endpoint's message for any status but 200."""
        connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        headers = {"Authorization": "Bearer " + self._token, "Content-Type": "text/x-linkcond"}
        try:
            connection.request(method, path, body=body.encode("utf-8"), headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", errors="replace")
            status = response.status
        except OSError as error:
            raise self._on_failure(method, path, error) from error
        finally:
            connection.close()
        if status != 200:
            raise ApiError(method, path, status, text.strip())
        return text

    def json(self, path: str) -> Dict[str, Any]:
        text = self.request("GET", path)
        try:
            value = json.loads(text)
        except ValueError as error:
            raise LinkcondError(f"GET {path}: expected JSON, got {text[:200]!r}") from error
        if not isinstance(value, dict):
            raise LinkcondError(f"GET {path}: expected a JSON object, got {text[:200]!r}")
        return value


def settings_body(settings: Dict[str, str]) -> str:
    """``key = value`` lines; a key or value that would break a line is refused before anything is sent."""
    if not settings:
        raise ValueError("set() needs at least one setting")
    lines = []
    for key, value in settings.items():
        for part in (key, value):
            if "\n" in part or "\r" in part:
                raise ValueError(f"setting {key!r}: a key or value cannot span lines")
        lines.append(f"{key} = {value}\n")
    return "".join(lines)


def scenario_request(control: Control, name_or_text: str) -> tuple[str, str]:
    """The path and body that start a scenario: a shipped scenario's name is looked up in ``/catalog``
    (the endpoint takes scenario text only), anything with whitespace is sent as scenario text."""
    if any(character.isspace() for character in name_or_text.strip()) or not name_or_text.strip():
        return "/scenario", name_or_text
    name = name_or_text.strip()
    scenarios = control.json("/catalog").get("scenarios", [])
    for entry in scenarios:
        if isinstance(entry, dict) and entry.get("name") == name:
            return "/scenario?name=" + urllib.parse.quote(name, safe=""), str(entry.get("text", ""))
    names = ", ".join(str(entry.get("name")) for entry in scenarios if isinstance(entry, dict))
    raise LinkcondError(f"no shipped scenario {name!r}; shipped: {names}; or pass scenario text (\"TIME ACTION\" lines)")


def offline_body(mode: Optional[str]) -> str:
    return "" if mode is None else mode
