#!/usr/bin/python3
# Ignores SIGTERM and the end of its stdin: only SIGKILL ends it.
# Usage: stubborn_worker.py [READY_FILE], created once SIGTERM is ignored.
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
if len(sys.argv) > 1:
    open(sys.argv[1], "w").close()
for line in sys.stdin:
    pass
while True:
    time.sleep(1)
