#!/usr/bin/python3
# Answers according to each record's data, so one worker covers the protocol's cases:
#   ack | term | nak (5s delay, two publishes) | keys (term, error = the record's keys) |
#   fence (term, error = "fence <partition> <epoch> <stream_seq>") |
#   weird (an unknown result) | noise (junk lines first, then ack)
import json
import sys

for line in sys.stdin:
    record = json.loads(line)
    rid, data = record["id"], record["data"]
    if data == "nak":
        answer = {"id": rid, "result": "nak", "delay": "5s",
                  "publish": [{"subject": "retry." + record["subject"], "data": data},
                              {"subject": "audit", "data": "naked"}]}
    elif data == "keys":
        answer = {"id": rid, "result": "term", "error": ",".join(record.keys())}
    elif data == "fence":
        token = (record["partition"], record["epoch"], record["stream_seq"])
        answer = {"id": rid, "result": "term", "error": "fence %s %s %s" % token}
    elif data == "weird":
        answer = {"id": rid, "result": "maybe"}
    elif data == "noise":
        print("this is not json", flush=True)
        print(json.dumps({"result": "ack"}), flush=True)
        answer = {"id": rid, "result": "ack"}
    elif data == "term":
        answer = {"id": rid, "result": "term"}
    else:
        answer = {"id": rid, "result": "ack"}
    print(json.dumps(answer), flush=True)
