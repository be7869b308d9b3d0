#!/usr/bin/python3
# A worker-sink worker that takes SECONDS to handle each record, then appends
# "<stream_seq> <delivered>" to OUT and answers ack. MODE "serial" handles one record at a time
# (records handed over meanwhile wait in its stdin); "parallel" handles each in its own thread.
# Usage: slow_worker.py OUT SECONDS MODE
import json
import sys
import threading
import time

out_path, seconds, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
lock = threading.Lock()


def handle(record):
    time.sleep(seconds)
    with lock:
        with open(out_path, "a") as out:
            out.write(f"{record['stream_seq']} {record['delivered']}\n")
        sys.stdout.write(json.dumps({"id": record["id"], "result": "ack"}) + "\n")
        sys.stdout.flush()


for line in sys.stdin:
    record = json.loads(line)
    if mode == "parallel":
        threading.Thread(target=handle, args=(record,), daemon=True).start()
    else:
        handle(record)
# stdin closed: finish what is in hand before exiting.
for thread in threading.enumerate():
    if thread is not threading.current_thread():
        thread.join()
