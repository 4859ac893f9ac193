"""A small HTTP/1.1 server with keep-alive for the recording tests: GET /N answers N bytes (default 500).
Prints "port N" once listening; exits when stdin closes."""
import http.server, socketserver, sys, threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        size = int(self.path.strip("/") or "500")
        body = b"x" * size
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        # Says it closes, as HTTP/1.1 servers should: a client told only by the FIN may reuse the connection in the
        # moment before the FIN arrives (curl did under a slow linkcond), and a test then counts one request more.
        if self.headers.get("Connection", "").lower() == "close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("port", server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
