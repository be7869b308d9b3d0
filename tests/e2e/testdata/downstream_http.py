#!/usr/bin/python3
# An HTTP endpoint whose health a test switches with files in CONTROL:
#   CONTROL/down    exists: 503 to everything (an outage)
#   CONTROL/hang    exists: never answers (a stuck endpoint)
#   CONTROL/poison  lines of payloads answered 400 (a message the endpoint refuses)
# Otherwise 200, appending "<data> <Nats-Delivered>" to OUT.
# Usage: downstream_http.py PORT OUT CONTROL
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, out_path, control = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock = threading.Lock()


def poison():
    try:
        with open(os.path.join(control, "poison")) as f:
            return {line.strip() for line in f if line.strip()}
    except FileNotFoundError:
        return set()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if os.path.exists(os.path.join(control, "hang")):
            while True:
                time.sleep(3600)
        data = json.loads(body)["data"]
        if os.path.exists(os.path.join(control, "down")):
            status = 503
        elif data in poison():
            status = 400
        else:
            status = 200
            with lock, open(out_path, "a") as out:
                out.write(f"{data} {self.headers.get('Nats-Delivered')}\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
