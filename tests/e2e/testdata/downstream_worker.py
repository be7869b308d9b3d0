#!/usr/bin/python3
# A worker-sink worker whose behaviour a test switches with files in CONTROL:
#   CONTROL/down      exists at start: exits at once (a worker that cannot come up)
#   CONTROL/crash_on  a payload: the worker exits when handed it (a poison that looks like an
#                     outage: every message in flight fails with it)
#   CONTROL/poison    lines of payloads answered "term"
# Otherwise appends "<data> <delivered>" to OUT and answers ack.
# Usage: downstream_worker.py OUT CONTROL
import json
import os
import sys

out_path, control = sys.argv[1], sys.argv[2]


def read(name):
    try:
        with open(os.path.join(control, name)) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


if os.path.exists(os.path.join(control, "down")):
    sys.exit(1)
crash_on = set(read("crash_on"))
poison = set(read("poison"))
for line in sys.stdin:
    record = json.loads(line)
    if record["data"] in crash_on:
        os._exit(3)
    if record["data"] in poison:
        answer = {"id": record["id"], "result": "term", "error": "refused by the worker"}
    else:
        with open(out_path, "a") as out:
            out.write(f"{record['data']} {record['delivered']}\n")
        answer = {"id": record["id"], "result": "ack"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
