#!/usr/bin/python3
# A worker that acks each record, writes its payload to a file, and exits (status 3) without
# answering every Nth record it reads: the daemon must restart it and nothing may be lost.
import json
import sys

n = int(sys.argv[1])
out = open(sys.argv[2], "a")
count = 0
for line in sys.stdin:
    count += 1
    if count == n:
        sys.exit(3)
    record = json.loads(line)
    out.write(record["data"] + "\n")
    out.flush()
    print(json.dumps({"id": record["id"], "result": "ack"}), flush=True)
