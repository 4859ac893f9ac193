"""A running ``linkcond run``: started with a profile, stopped with SIGTERM."""

from __future__ import annotations

import atexit
import io
import queue
import signal
import subprocess
import threading
import time
import weakref
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Union, cast

from ._binary import child_environment, find_binary, new_token
from ._control import Control, offline_body, scenario_request, settings_body
from .errors import LinkcondError, StartError

#: The most of linkcond's stderr kept in memory, its last bytes.
STDERR_LIMIT = 256 * 1024

#: Instances not yet stopped, stopped when the interpreter exits so none outlives a test run.
_running: "weakref.WeakSet[Linkcond]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for instance in list(_running):
        instance.stop()


class _StderrTail:
    """Drains a pipe on a thread of its own, so linkcond never blocks on a full stderr, keeping the last bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._lock = threading.Lock()
        self._data = bytearray()
        self._thread = threading.Thread(target=self._drain, args=(pipe,), name="linkcond-stderr", daemon=True)
        self._thread.start()

    def _drain(self, pipe: IO[bytes]) -> None:
        with pipe:
            buffered = cast(io.BufferedReader, pipe)  # Popen's pipes are buffered: read1 returns what is there
            for chunk in iter(lambda: buffered.read1(65536), b""):
                with self._lock:
                    self._data += chunk
                    if len(self._data) > STDERR_LIMIT:
                        del self._data[: len(self._data) - STDERR_LIMIT]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    @property
    def text(self) -> str:
        with self._lock:
            return self._data.decode("utf-8", errors="replace")


class Linkcond:
    """One ``linkcond run`` process, conditioning connections to ``upstreams`` and/or through a SOCKS5/HTTP proxy.

    Started by the constructor, ready once it returns; use it as a context manager, or call ``stop()``::

        with Linkcond(profile="3g", upstreams=["127.0.0.1:8080"]) as link:
            connect_to(link.addresses[0])   # "127.0.0.1:PORT", relayed to 127.0.0.1:8080 through 3G
            link.offline()

    profile: a built-in profile's name or a profile file's path (``linkcond profiles`` lists the names).
    upstreams: ``HOST:PORT`` each; linkcond listens on a free loopback port for each, in order (``addresses``).
    proxy: also (or only) run the SOCKS5 and HTTP proxy (``proxy_url``, ``http_proxy_url``).
    scenario: a shipped scenario's name or a scenario file's path, played from the start.
    args: more ``linkcond run`` options, as they would be written on its command line.
    binary: the linkcond to run (default: ``$LINKCOND_BINARY``, else ``linkcond`` on ``PATH``).
    env: the environment linkcond runs in (default: this process's); the control token is added to it.
    start_timeout, stop_timeout, request_timeout: seconds to wait for the ready lines, for an exit after SIGTERM
    (SIGKILL follows) and for each control request.

    The control endpoint listens on a free loopback port with a token of this object's own, never on the per-user
    socket, so a test's instance is never the one a ``linkcond use`` in a terminal steers by default.
    """

    def __init__(self, profile: str = "none", *, upstreams: Sequence[str] = (), proxy: bool = False,
                 scenario: Optional[str] = None, args: Sequence[str] = (), binary: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None, start_timeout: float = 30.0, stop_timeout: float = 10.0,
                 request_timeout: float = 30.0) -> None:
        if isinstance(upstreams, str):
            raise TypeError("upstreams is a list of \"HOST:PORT\" strings, not one string")
        if not upstreams and not proxy:
            raise ValueError("Linkcond needs upstreams=[\"HOST:PORT\", ...], proxy=True, or both")
        self.token = new_token()
        self.stop_timeout = stop_timeout
        self.ready: List[List[str]] = []
        self._addresses: List[str] = []
        self._proxy: Optional[str] = None
        self._exit_status: Optional[int] = None
        self._killed = False
        self._stopped = False
        command = [find_binary(binary, env), "run", "--profile", profile, "--control", "127.0.0.1:0"]
        for upstream in upstreams:
            command += ["--listen", "127.0.0.1:0", "--upstream", upstream]
        if proxy:
            command += ["--proxy", "127.0.0.1:0"]
        if scenario is not None:
            command += ["--scenario", scenario]
        command += list(args)
        self.command = command
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=child_environment(self.token, env))
        assert self._process.stdout is not None and self._process.stderr is not None
        self._stderr = _StderrTail(self._process.stderr)
        try:
            control_url = self._read_ready_lines(self._process.stdout, start_timeout, expected_tcp=len(upstreams),
                                                 expects_proxy=proxy)
            self._control = Control(control_url, self.token, request_timeout, self._request_failed)
        except BaseException:
            self._kill()
            raise
        _running.add(self)

    # Starting and stopping

    def _read_ready_lines(self, stdout: IO[bytes], timeout: float, expected_tcp: int, expects_proxy: bool) -> str:
        lines: "queue.Queue[Optional[str]]" = queue.Queue()

        def read() -> None:
            with stdout:
                for raw in stdout:
                    lines.put(raw.decode("utf-8", errors="replace").rstrip("\n"))
            lines.put(None)

        threading.Thread(target=read, name="linkcond-stdout", daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._kill()
                raise StartError(f"{self._described()} printed no \"ready control\" line within {timeout:g} s "
                                 "and was stopped", None, self._stderr_after_exit()) from None
            if line is None:
                status = self._wait_for_exit(5.0)
                raise StartError(f"{self._described()} exited with status {status} before it was ready",
                                 status, self._stderr_after_exit())
            words = line.split()
            if len(words) < 2 or words[0] != "ready":
                continue
            self.ready.append(words)
            if words[1] == "tcp" and len(words) >= 3:
                self._addresses.append(words[2])
            elif words[1] == "proxy" and len(words) >= 3:
                self._proxy = words[2]
            elif words[1] == "control" and len(words) >= 3:
                if len(self._addresses) < expected_tcp or (expects_proxy and self._proxy is None):
                    self._kill()
                    raise StartError(f"{self._described()} said ready without every listener: {self.ready}",
                                     None, self._stderr_after_exit())
                return words[2]

    def _described(self) -> str:
        return "linkcond run (" + " ".join(self.command[1:]) + ")"

    def _wait_for_exit(self, timeout: float) -> Optional[int]:
        try:
            self._exit_status = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self._exit_status

    def _stderr_after_exit(self) -> str:
        if self._process.poll() is not None:
            self._stderr.join(5.0)
        return self._stderr.text

    def _kill(self) -> None:
        if self._process.poll() is None:
            self._killed = True
            self._process.kill()
        self._wait_for_exit(self.stop_timeout)

    def stop(self) -> Optional[int]:
        """Sends SIGTERM and waits up to ``stop_timeout`` s, then SIGKILL; returns the exit status (0 after a
        clean stop; negative: the signal that ended it). Calling it again returns the same status."""
        self._stopped = True
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            if self._wait_for_exit(self.stop_timeout) is None:
                self._kill()
        else:
            self._exit_status = self._process.returncode
        self._stderr.join(5.0)
        _running.discard(self)
        return self._exit_status

    @property
    def killed(self) -> bool:
        """Whether this client had to SIGKILL linkcond (it did not exit within ``stop_timeout`` of SIGTERM)."""
        return self._killed

    @property
    def exit_status(self) -> Optional[int]:
        """linkcond's exit status once it has exited, else None."""
        return self._process.poll()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stderr(self) -> str:
        """What linkcond has written to stderr so far (its last 256 KiB)."""
        return self._stderr.text

    def __enter__(self) -> "Linkcond":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _request_failed(self, method: str, path: str, error: OSError) -> LinkcondError:
        status = self._process.poll()
        if status is not None and self._stopped:
            return LinkcondError(f"{method} {path}: this linkcond was stopped (exit status {status})")
        if status is not None:
            self._stderr.join(5.0)
            return LinkcondError(f"{method} {path}: linkcond has exited with status {status}; its stderr:\n"
                                 + self._stderr.text.rstrip())
        return LinkcondError(f"{method} {path}: could not reach linkcond's control endpoint "
                             f"{self._control.url}: {error}")

    # Where to connect

    @property
    def addresses(self) -> List[str]:
        """``HOST:PORT`` of each listener, one per upstream, in the order given."""
        return list(self._addresses)

    @property
    def proxy_address(self) -> str:
        if self._proxy is None:
            raise LinkcondError("this linkcond runs no proxy; start it with proxy=True")
        return self._proxy

    @property
    def proxy_url(self) -> str:
        """The SOCKS5 proxy, names resolved by linkcond: ``socks5h://HOST:PORT`` (for ALL_PROXY)."""
        return "socks5h://" + self.proxy_address

    @property
    def http_proxy_url(self) -> str:
        """The same proxy spoken as HTTP: ``http://HOST:PORT`` (for http_proxy and https_proxy)."""
        return "http://" + self.proxy_address

    @property
    def control_url(self) -> str:
        """The control endpoint, ``http://127.0.0.1:PORT``; requests need ``Authorization: Bearer`` + token."""
        return self._control.url

    # Steering

    def use(self, profile: str) -> str:
        """Switches to a built-in profile (by name) or to profile text (``key = value`` lines); stops a
        scenario. Returns the profile as linkcond resolved it."""
        return self._control.request("PUT", "/profile", profile)

    def set(self, key_or_settings: Union[str, Mapping[str, str]], value: Optional[str] = None) -> str:
        """Changes settings, all or none: ``set("downlink.delay", "300 ms")`` or
        ``set({"loss": "2 %", "downlink.bandwidth": "1 Mbit/s"})``. Returns the resulting profile."""
        if isinstance(key_or_settings, str):
            if value is None:
                raise TypeError("set(key, value) needs a value")
            settings = {key_or_settings: str(value)}
        else:
            if value is not None:
                raise TypeError("set(mapping) takes no value")
            settings = {str(key): str(item) for key, item in key_or_settings.items()}
        return self._control.request("POST", "/settings", settings_body(settings))

    def offline(self, mode: Optional[str] = None) -> None:
        """Airplane mode: ``"refuse"`` (the default: new connections are reset) or ``"blackhole"`` (they hang);
        existing connections stall with their data kept."""
        self._control.request("POST", "/offline", offline_body(mode))

    def online(self) -> None:
        """Ends airplane mode; stalled connections resume where they were."""
        self._control.request("POST", "/online")

    def reset(self) -> None:
        """Resets every live connection."""
        self._control.request("POST", "/reset")

    def scenario(self, name_or_text: str) -> None:
        """Plays a shipped scenario (by name) or scenario text (``TIME ACTION`` lines naming built-in profiles)."""
        path, body = scenario_request(self._control, name_or_text)
        self._control.request("PUT", path, body)

    def stop_scenario(self) -> None:
        """Stops the scenario that is playing, if any."""
        self._control.request("DELETE", "/scenario")

    def status(self) -> Dict[str, Any]:
        """``GET /status``: version, profile, offline state, scenario, and per listener its counters."""
        return self._control.json("/status")

    def profile(self) -> str:
        """The current profile, fully resolved, in the profile file format."""
        return self._control.request("GET", "/profile")

    def request(self, method: str, path: str, body: str = "") -> str:
        """Any other control request, for instance ``request("GET", "/metrics")``."""
        return self._control.request(method, path, body)

    def __repr__(self) -> str:
        state = "running" if self._process.poll() is None else f"exited {self._process.poll()}"
        return f"<Linkcond pid={self._process.pid} {state} addresses={self._addresses} proxy={self._proxy}>"
