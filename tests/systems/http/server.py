"""An HTTP system for the `http:` connector tests: the echo system (tests/systems/echo/app.py,
found on PYTHONPATH) served over HTTP.

    PYTHONPATH=python:tests/systems/echo python3 tests/systems/http/server.py

Prints the port it listens on (127.0.0.1, chosen by the OS) on its first line, then serves the
worker protocol: each POST body is one request object, each response body one response object.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from oloproof import worker as protocol

SYSTEM = protocol.Worker("app:Echo")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length", "0"))
        try:
            req = json.loads(self.rfile.read(length))
        except ValueError as exc:
            return self.reply(400, {"id": None, "error": {"type": "ProtocolError", "message": str(exc), "traceback": ""}})
        try:
            ok = SYSTEM.handle(req)
            body = {"id": req.get("id"), "ok": ok}
        except Exception as exc:  # noqa: BLE001 - reported to the host
            body = {"id": req.get("id"), "error": protocol._error_from_exception(exc)}
        self.reply(200, body)

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    sys.stdout = sys.stderr
    server.serve_forever()
