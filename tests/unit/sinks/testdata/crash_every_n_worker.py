#!/usr/bin/python3
# Acks records but exits (status 3) without answering the Nth record it reads.
import json
import sys

n = int(sys.argv[1])
count = 0
for line in sys.stdin:
    count += 1
    if count == n:
        sys.exit(3)
    record = json.loads(line)
    print(json.dumps({"id": record["id"], "result": "ack"}), flush=True)
