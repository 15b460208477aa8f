#!/usr/bin/env python3
"""Runs a command against a server started for it.

Usage: with_server.py SERVER_COMMAND... -- CLIENT_COMMAND...

Starts SERVER_COMMAND, whose first line of output must name its address as
http://127.0.0.1:PORT (folio-serve --port 0 prints it), replaces "{url}" in
CLIENT_COMMAND's arguments with that address, runs the client, then stops the
server with SIGTERM. Exits with the client's status; the client's stdout and
stderr pass through.
"""
import re
import signal
import subprocess
import sys


def main():
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit("usage: with_server.py SERVER... -- CLIENT...")
    split = args.index("--")
    server_cmd, client_cmd = args[:split], args[split + 1:]
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    line = server.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
    if not m:
        server.kill()
        sys.exit("the server did not start: " + line + server.stdout.read())
    url = m.group(1)
    try:
        client = subprocess.run([a.replace("{url}", url) for a in client_cmd])
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    sys.exit(client.returncode)


if __name__ == "__main__":
    main()
