"""The part every HTTP server of the tests shares: a quiet handler that answers whole bodies, started on 127.0.0.1."""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """No access log on stderr; ``_send`` answers a status with a whole body and any headers; ``_trickle`` a body slowly."""

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, body: bytes, rate: int, step: int = 2048) -> None:
        """Write ``body`` at about ``rate`` bytes a second, as a throttled mirror sends it."""
        for at in range(0, len(body), step):
            self.wfile.write(body[at : at + step])
            self.wfile.flush()
            time.sleep(step / rate)

    def log_message(self, *args) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # a dozen transfers connecting at once, none waiting a second for a SYN to be retried

    def handle_error(self, request, client_address) -> None:
        """A client that hung up mid-body (as a stopped transfer does) is not an error of the test server."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """A threading server on a free port of 127.0.0.1, serving in a daemon thread; (server, its base URL)."""
    httpd = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"
