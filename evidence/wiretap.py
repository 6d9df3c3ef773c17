#!/usr/bin/env python3
"""Transparent stdio relay that records every JSON-RPC line.

    wiretap.py LOG_FILE COMMAND [ARGS...]

Starts COMMAND, copies this process's stdin to it and its stdout back,
line by line and unchanged, and appends one JSON record per line to
LOG_FILE: {"from": "client"|"server", "message": <the line as JSON>}
(a line that is not JSON is recorded as a string). When the command ends,
a last record {"server_exit_code": N} is written. COMMAND's stderr is
passed through untouched.

The MCP Inspector CLI prints only the result of its one method, so the
driver starts the server through this relay to keep the messages exactly
as they were exchanged (initialize, tools/list, tools/call, ...). There is
no `--` before COMMAND because the Inspector CLI consumes `--` itself.
Standard library only: it runs with any python3.
"""

import json
import signal
import subprocess
import sys
import threading


def record(log, lock, origin, raw):
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    try:
        message = json.loads(text)
    except ValueError:
        message = text
    with lock:
        log.write(json.dumps({"from": origin, "message": message}) + "\n")
        log.flush()


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: wiretap.py LOG_FILE COMMAND [ARGS...]\n")
        return 2
    log_path, command = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8")

    # A client that gives up sends SIGTERM: end the server the way a closed
    # stdin would, so it is not left behind.
    def stop(_signum, _frame):
        if child.poll() is None:
            child.terminate()

    signal.signal(signal.SIGTERM, stop)

    def client_to_server():
        try:
            for raw in iter(sys.stdin.buffer.readline, b""):
                record(log, lock, "client", raw)
                child.stdin.write(raw)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                child.stdin.close()
            except OSError:
                pass

    threading.Thread(target=client_to_server, daemon=True).start()
    for raw in iter(child.stdout.readline, b""):
        record(log, lock, "server", raw)
        try:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
        except (BrokenPipeError, OSError):
            break
    code = child.wait()
    with lock:
        log.write(json.dumps({"server_exit_code": code}) + "\n")
        log.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
