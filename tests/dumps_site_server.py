"""A small copy of dumps.wikimedia.org on 127.0.0.1: a folder served as the site serves it, with faults on demand.

Folders answer with their ``index.html`` if they hold one (the real listings kept in
``fixtures/dumps_site``), else with nginx's autoindex page in the same format
(``autoindex`` reproduces two of the real ones byte for byte); files with
HTTP Range support. ``faults[path]`` is a list consumed one per request: ``drop`` (half
the body, then the connection dies), ``503`` (with ``Retry-After: 1``), ``html`` (an
error page with status 200, as a misconfigured proxy sends), ``norange`` (the whole
body with 200, whatever Range asked). It counts requests and the most connections open
at once.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote

from local_http import QuietHandler, serve

_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
ERROR_PAGE = b"<!DOCTYPE html><html><head><title>Wikimedia Error</title></head><body>Our servers are currently under maintenance</body></html>"


def autoindex(path: str, entries: list[tuple[str, bool, datetime, int]], body: str = "<body>") -> str:
    """nginx's autoindex HTML (exact sizes): folders first, names cut to 47 characters + ``..&gt;`` past 50, CRLF."""
    lines = [f"<html>\r\n<head><title>Index of {path}</title></head>\r\n{body}\r\n<h1>Index of {path}</h1><hr><pre><a href=\"../\">../</a>\r\n"]
    for name, is_dir, when, size in sorted(entries, key=lambda entry: (not entry[1], entry[0])):
        shown = name + "/" if is_dir else name
        text = name[:47] + "..&gt;</a>" if len(name) > 50 else shown + "</a>" + " " * (50 - len(shown))
        stamp = f"{when.day:02d}-{_MONTHS[when.month - 1]}-{when.year} {when.hour:02d}:{when.minute:02d}"
        lines.append(f'<a href="{shown}">{text} {stamp} ' + ("-".rjust(19) if is_dir else f"{size:19d}") + "\r\n")
    return "".join(lines) + "</pre><hr></body>\r\n</html>\r\n"


class DumpsSite:
    """Serves ``root`` as the dumps site; ``url`` is its base."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.open = self.most_open = 0
        self.lock = threading.Lock()
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                with site.lock:
                    site.open += 1
                    site.most_open = max(site.most_open, site.open)
                self.counted = True
                try:
                    self._answer()
                finally:
                    self._release()

            def _release(self) -> None:
                """No longer counted as open: done before the last byte goes out, so the client cannot have moved on first."""
                if self.counted:
                    self.counted = False
                    with site.lock:
                        site.open -= 1

            def _answer(self) -> None:
                path = unquote(self.path.split("?")[0]).lstrip("/")
                site.requests.append((path, self.headers.get("Range")))
                with site.lock:
                    pending = site.faults.get(path, [])
                    fault = pending.pop(0) if pending else None
                local = site.root / path
                if fault == "503":
                    return self._send(503, b"busy", {"Retry-After": "1"})
                if fault == "html":
                    return self._send(200, ERROR_PAGE, {"Content-Type": "text/html"})
                if local.is_dir() and (local / "index.html").is_file():  # a kept real listing, served as nginx serves index.html
                    local = local / "index.html"
                elif local.is_dir():
                    entries = [(e.name, e.is_dir(), datetime.fromtimestamp(e.stat().st_mtime, timezone.utc), e.stat().st_size) for e in local.iterdir()]
                    return self._send(200, autoindex("/" + path, entries).encode(), {"Content-Type": "text/html"})
                if not local.is_file():
                    return self._send(404, b"<html><body>404 Not Found</body></html>")
                body = local.read_bytes()
                start, status = 0, 200
                asked = self.headers.get("Range")
                if asked and fault != "norange":
                    start, status = int(asked.split("=")[1].split("-")[0]), 206
                    if start >= len(body):
                        return self._send(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if fault == "drop":
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "slow":  # long enough for other transfers to overlap it
                    for at in range(start, len(body) - 1, 1 << 14):
                        self.wfile.write(body[at : min(at + (1 << 14), len(body) - 1)])
                        time.sleep(0.01)
                    start = len(body) - 1
                self.wfile.write(body[start:-1])
                self.wfile.flush()
                self._release()
                self.wfile.write(body[-1:])

        self.httpd, self.url = serve(Handler)

    def file_requests(self, name: str) -> list[str | None]:
        """The Range header of each request for a file (by its name), in order."""
        return [asked for path, asked in self.requests if path.endswith("/" + name)]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
