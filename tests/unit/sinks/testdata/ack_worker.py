#!/usr/bin/python3
# Acks every record it reads; exits when its stdin closes.
import json
import sys

for line in sys.stdin:
    record = json.loads(line)
    print(json.dumps({"id": record["id"], "result": "ack"}), flush=True)
