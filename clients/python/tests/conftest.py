"""Servers on 127.0.0.1 port 0 for the tests to condition: an echo server and an HTTP server."""

from __future__ import annotations

import http.server
import socket
import socketserver
import threading
from typing import Iterator

import pytest

class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"page {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _ThreadingTCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(server: socketserver.BaseServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def echo_server() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a server that echoes every byte back."""
    yield from _serve(_ThreadingTCPServer(("127.0.0.1", 0), _Echo))


@pytest.fixture
def http_server() -> Iterator[str]:
    """``127.0.0.1:PORT`` of an HTTP server answering ``page PATH``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    server.daemon_threads = True
    yield from _serve(server)


def connect(address: str, timeout: float = 30.0) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)
