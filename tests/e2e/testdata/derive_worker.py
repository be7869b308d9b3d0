#!/usr/bin/python3
# A worker that acks each record and asks the daemon to publish one derived event for it:
# subject argv[1], data "<argv[2]>:<record data>".
import json
import sys

subject, tag = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    record = json.loads(line)
    publish = [{"subject": subject, "data": tag + ":" + record["data"]}]
    print(json.dumps({"id": record["id"], "result": "ack", "publish": publish}), flush=True)
