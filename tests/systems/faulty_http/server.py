#!/usr/bin/env python3
"""faulty_http: an HTTP system (protocol 1 over POST, docs/protocol.md §9) that misbehaves on
request, for the fault-injection tests (crates/cli/tests/faults_system.rs).

    python3 tests/systems/faulty_http/server.py [--mute]

Prints the port it listens on (127.0.0.1, chosen by the OS) on its first line. retrieve returns
one passage per word of the question; generate answers with the question. A question
containing one of these words makes `generate` misbehave:

- `never-answer`: the request is read and never answered (the connection stays open);
- `html-500`: the answer is HTTP 500 with an HTML error page, as a proxy or framework gives;
- `close-mid-body`: the headers announce 1,000 bytes of JSON, 40 are sent, then the connection
  is closed.

With `--mute` the server accepts connections and never reads or answers anything at all.
"""

import json
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HTML = b"""<!DOCTYPE html>
<html><head><title>500 Internal Server Error</title></head>
<body><h1>Internal Server Error</h1><p>The server encountered an internal error and was unable
to complete your request.</p></body></html>
"""


def retrieve(req):
    question = req["input"]["question"]
    words = question.split()[: req["depth"]]
    return {"query": question, "depth": req["depth"], "candidates": [
        {"doc_id": "w-" + w, "chunk_id": None, "score": float(len(words) - i), "text": w,
         "metadata": None} for i, w in enumerate(words)]}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        rid, op = req.get("id"), req.get("op")
        question = (req.get("input") or {}).get("question", "")
        if op == "hello":
            return self.reply(200, {"id": rid, "ok": {"protocol": 1, "name": "faulty-http",
                                                      "version": "1", "defaults": {},
                                                      "ops": ["retrieve", "generate"]}})
        if op == "retrieve":
            return self.reply(200, {"id": rid, "ok": retrieve(req)})
        if "never-answer" in question:
            time.sleep(3600)
            return None
        if "html-500" in question:
            return self.send(500, "text/html; charset=utf-8", HTML)
        if "not-utf8" in question:
            return self.send(200, "application/json", b'{"id": %d, "ok": {"answer": "caf\xe9"}}' % rid)
        if "close-mid-body" in question:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"id": %d, "ok": {"answer": "cut off here' % rid)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return None
        context = req.get("context") or []
        return self.reply(200, {"id": rid, "ok": {
            "answer": question, "citations": [context[0]["doc_id"]] if context else []}})

    def reply(self, status, body):
        self.send(status, "application/json", json.dumps(body).encode())

    def send(self, status, content_type, data):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def mute():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    held = []
    while True:
        conn, _ = listener.accept()
        held.append(conn)  # accepted, never read, never answered, never closed


if __name__ == "__main__":
    if "--mute" in sys.argv[1:]:
        mute()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    sys.stdout = sys.stderr
    server.serve_forever()
