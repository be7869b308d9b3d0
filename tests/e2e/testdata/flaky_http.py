#!/usr/bin/python3
# An HTTP endpoint that answers 500 to its first FAILS requests and 200 afterwards, appending
# "<status> <data> <Nats-Delivered>" per request to OUT.  Usage: flaky_http.py PORT FAILS OUT
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, fails, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
seen = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        record = json.loads(body)
        with lock:
            seen += 1
            status = 500 if seen <= fails else 200
            with open(out_path, "a") as out:
                out.write(f"{status} {record['data']} {self.headers.get('Nats-Delivered')}\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
