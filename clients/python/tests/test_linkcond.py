"""The Python client against the real linkcond binary (LINKCOND_BINARY, else linkcond on PATH), on loopback only.

Nothing here depends on the machine's speed: every wait is for a condition, bounded by a socket timeout, and the
only timing assertion is a lower bound (a round trip takes at least the profile's two delays, less a tolerance).
"""

from __future__ import annotations

import http.client
import os
import socket
import struct
import time

import pytest

import linkcond
from linkcond import ApiError, Linkcond, LinkcondError, StartError

from conftest import connect


def receive_exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def test_relays_bytes_exactly_through_each_address_in_order(echo_server: str, http_server: str) -> None:
    payload = os.urandom(24 * 1024)
    with Linkcond(profile="3g", upstreams=[echo_server, http_server]) as link:
        assert len(link.addresses) == 2
        assert [words[3] for words in link.ready if words[1] == "tcp"] == [echo_server, http_server]
        with connect(link.addresses[0]) as sock:
            sock.sendall(payload)
            assert receive_exactly(sock, len(payload)) == payload
        host, port = link.addresses[1].rsplit(":", 1)
        page = http.client.HTTPConnection(host, int(port), timeout=30)
        page.request("GET", "/second")
        assert page.getresponse().read() == b"page /second\n"
        page.close()
        assert link.status()["listeners"][0]["downlink"]["bytesDelivered"] >= len(payload)
    assert link.stop() == 0


def test_a_round_trip_takes_at_least_the_profiles_delays(echo_server: str) -> None:
    with Linkcond(profile="3g", upstreams=[echo_server]) as link, connect(link.addresses[0]) as sock:
        started = time.monotonic()
        sock.sendall(b"x")
        assert receive_exactly(sock, 1) == b"x"
        assert time.monotonic() - started >= 0.200 - 0.050  # 3g: 100 ms each way; 50 ms tolerance


def test_use_and_set_change_what_status_reports(echo_server: str) -> None:
    with Linkcond(profile="3g", upstreams=[echo_server]) as link:
        assert link.status()["profile"] == "3g"
        assert "downlink.delay = 400 ms" in link.use("edge")
        assert link.status()["profile"] == "edge"
        link.use("downlink.bandwidth = 1 Mbit/s\ndownlink.delay = 30 ms\n")
        assert "1 Mbit/s down" in link.status()["profileSummary"]
        link.set("downlink.delay", "300 ms")
        assert "300 ms" in link.status()["profileSummary"]
        link.set({"loss": "2 %", "uplink.delay": "10 ms"})
        summary = link.status()["profileSummary"]
        assert "300 ms/10 ms delay" in summary and "2 % loss" in summary
        assert "uplink.delay = 10 ms" in link.profile()


def test_offline_refuses_new_connections_and_online_restores_them(echo_server: str) -> None:
    with Linkcond(profile="none", upstreams=[echo_server]) as link:
        link.offline()
        assert link.status()["offline"] == "refuse"
        try:
            with connect(link.addresses[0]) as sock:
                sock.sendall(b"hello")
                echoed = sock.recv(5)
        except ConnectionError:
            echoed = b""
        assert echoed == b""
        link.offline(mode="blackhole")
        assert link.status()["offline"] == "blackhole"
        link.online()
        assert "offline" not in link.status()
        with connect(link.addresses[0]) as sock:
            sock.sendall(b"hello")
            assert receive_exactly(sock, 5) == b"hello"


def test_reset_ends_live_connections(echo_server: str) -> None:
    with Linkcond(profile="none", upstreams=[echo_server]) as link, connect(link.addresses[0]) as sock:
        sock.sendall(b"ping")
        assert receive_exactly(sock, 4) == b"ping"
        link.reset()
        try:
            ended = sock.recv(1) == b""
        except ConnectionError:
            ended = True
        assert ended


def test_scenarios_by_name_and_by_text(echo_server: str) -> None:
    with Linkcond(profile="3g", upstreams=[echo_server]) as link:
        link.scenario("subway")
        assert link.status()["scenario"]["name"] == "subway"
        link.stop_scenario()
        assert "scenario" not in link.status()
        link.scenario("0s edge\n1h lte\n")
        assert link.status()["profile"] == "edge"
        with pytest.raises(LinkcondError, match="subway"):
            link.scenario("no-such-scenario")
        with pytest.raises(ApiError) as refused:
            link.scenario("0s no-such-profile\n")
        assert refused.value.status == 400


def test_a_bad_profile_name_gives_linkconds_message(echo_server: str) -> None:
    with Linkcond(profile="3g", upstreams=[echo_server]) as link:
        with pytest.raises(ApiError) as refused:
            link.use("no-such-profile")
        assert refused.value.status == 400
        assert 'no built-in profile "no-such-profile"' in refused.value.message
        assert refused.value.method == "PUT" and refused.value.path == "/profile"
        with pytest.raises(ApiError, match='unknown key "no.such.key"'):
            link.set("no.such.key", "1")
        assert link.status()["profile"] == "3g"


def test_a_failed_start_raises_with_stderr_and_status(echo_server: str) -> None:
    with pytest.raises(StartError) as failed:
        Linkcond(profile="3g", upstreams=[echo_server], args=["--no-such-option"])
    assert failed.value.status == 2
    assert "--no-such-option" in failed.value.stderr
    assert "--no-such-option" in str(failed.value)
    with pytest.raises(StartError, match='no built-in profile "no-such-profile"'):
        Linkcond(profile="no-such-profile", proxy=True)


def fake_linkcond(directory: "os.PathLike[str]", script: str) -> str:
    path = os.path.join(str(directory), "fake-linkcond")
    with open(path, "w") as file:
        file.write("#!/bin/sh\n" + script + "\n")
    os.chmod(path, 0o755)
    return path


def test_output_that_is_not_ready_lines_is_no_parse_error(tmp_path: "os.PathLike[str]") -> None:
    binary = fake_linkcond(tmp_path, "echo 'something else'; echo 'ready'; echo 'linkcond: broke' >&2; exit 1")
    with pytest.raises(StartError) as failed:
        Linkcond(profile="3g", proxy=True, binary=binary)
    assert failed.value.status == 1
    assert "linkcond: broke" in failed.value.stderr


def test_a_start_that_never_says_ready_is_stopped(tmp_path: "os.PathLike[str]") -> None:
    binary = fake_linkcond(tmp_path, "echo 'waiting' >&2; exec sleep 600")
    with pytest.raises(StartError, match="no \"ready control\" line within 1 s") as failed:
        Linkcond(profile="3g", proxy=True, binary=binary, start_timeout=1)
    assert failed.value.status is None
    assert "waiting" in failed.value.stderr


def test_a_missing_binary_is_named(tmp_path: "os.PathLike[str]") -> None:
    with pytest.raises(LinkcondError, match="no-linkcond' is not an executable file"):
        Linkcond(profile="3g", proxy=True, binary=os.path.join(str(tmp_path), "no-linkcond"))
    with pytest.raises(LinkcondError, match="LINKCOND_BINARY"):
        Linkcond(profile="3g", proxy=True, env={"PATH": str(tmp_path)})
    with pytest.raises(ValueError):
        Linkcond(profile="3g")


def test_requests_after_stop_say_so(echo_server: str) -> None:
    link = Linkcond(profile="3g", upstreams=[echo_server])
    assert link.stop() == 0
    assert link.stop() == 0
    with pytest.raises(LinkcondError, match="stopped"):
        link.status()


def test_proxy_mode_gives_working_proxy_urls(http_server: str) -> None:
    with Linkcond(profile="3g", proxy=True) as link:
        assert link.proxy_url.startswith("socks5h://127.0.0.1:")
        assert link.http_proxy_url == "http://" + link.proxy_url[len("socks5h://"):]
        assert link.control_url.startswith("http://127.0.0.1:")
        # HTTP: an absolute URI to the proxy, as http_proxy makes clients do.
        host, port = link.http_proxy_url[len("http://"):].rsplit(":", 1)
        proxied = http.client.HTTPConnection(host, int(port), timeout=30)
        proxied.request("GET", f"http://{http_server}/through-http-proxy")
        answer = proxied.getresponse()
        assert (answer.status, answer.read()) == (200, b"page /through-http-proxy\n")
        proxied.close()
        # SOCKS5 with the name resolved by the proxy (socks5h), by hand: the standard library has no SOCKS.
        target_host, target_port = http_server.rsplit(":", 1)
        with connect(link.proxy_url[len("socks5h://"):]) as sock:
            sock.sendall(b"\x05\x01\x00")
            assert receive_exactly(sock, 2) == b"\x05\x00"
            name = target_host.encode()
            sock.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", int(target_port)))
            reply = receive_exactly(sock, 10)
            assert reply[:2] == b"\x05\x00"
            sock.sendall(b"GET /through-socks HTTP/1.0\r\nHost: x\r\n\r\n")
            response = b""
            while chunk := sock.recv(65536):
                response += chunk
            assert response.endswith(b"page /through-socks\n")
        proxy = [listener for listener in link.status()["listeners"] if listener["kind"] == "proxy"]
        assert proxy and proxy[0]["connectionsAccepted"] >= 2


def test_proxy_urls_without_a_proxy_say_so(echo_server: str) -> None:
    with Linkcond(profile="none", upstreams=[echo_server]) as link:
        with pytest.raises(LinkcondError, match="proxy=True"):
            _ = link.proxy_url


def test_exec_returns_the_programs_status_and_output() -> None:
    result = linkcond.exec("3g", ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=60)
    assert result.status == 3
    status, out, err = result
    assert out == "out\n"
    assert "err" in err
    assert linkcond.exec("none", ["sh", "-c", "exit 0"], timeout=60).status == 0
    assert linkcond.exec("no-such-profile", ["true"], timeout=60).status == 2
