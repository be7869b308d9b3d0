#!/usr/bin/python3
# Exits at once (status 1) for its first K starts, counted in a file; then acks like
# ack_worker.py. Usage: flaky_start_worker.py COUNTER_FILE K
import json
import sys

counter, k = sys.argv[1], int(sys.argv[2])
try:
    with open(counter) as f:
        starts = int(f.read() or 0)
except FileNotFoundError:
    starts = 0
with open(counter, "w") as f:
    f.write(str(starts + 1))
if starts < k:
    sys.exit(1)
for line in sys.stdin:
    record = json.loads(line)
    print(json.dumps({"id": record["id"], "result": "ack"}), flush=True)
