#!/usr/bin/python3
# Reads records and never answers: a wedged worker.
import sys

for line in sys.stdin:
    pass
