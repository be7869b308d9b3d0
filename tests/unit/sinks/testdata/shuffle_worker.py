#!/usr/bin/python3
# Answers out of order: collects records until none arrives for 20ms (or 8 are waiting), then
# answers them newest first. Each answer is a nak whose delay, in ms, is the record's data, so
# a test can tell whether every delivery got its own answer.
import json
import os
import select
import sys

pending = []
buffer = b""
fd = sys.stdin.fileno()
while True:
    ready, _, _ = select.select([fd], [], [], 0.02 if pending else None)
    if ready:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            pending.append(json.loads(line))
    if pending and (not ready or len(pending) >= 8):
        for record in reversed(pending):
            answer = {"id": record["id"], "result": "nak", "delay": record["data"] + "ms"}
            sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        pending = []
