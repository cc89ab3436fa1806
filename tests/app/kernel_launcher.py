"""A kernelspec's command for notebooks under test (tests/app/snippets.py): asks the zygote
(snippet_child.py) for an IPython kernel on the connection file jupyter_client wrote, passes signals on to it
and ends with it, so jupyter_client starts, interrupts and stops it as any kernel. Imports only the standard
library: it starts in a few milliseconds."""
import json
import os
import signal
import socket
import sys

connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(os.environ["ZYGOTE_SOCKET"])
request = {"kernel": sys.argv[1], "env": dict(os.environ), "folder": os.getcwd(), "site": os.environ["PYTHONPATH"]}
connection.sendall((json.dumps(request) + "\n").encode())
replies = connection.makefile()
pid = int(replies.readline())
for number in (signal.SIGINT, signal.SIGTERM):
    signal.signal(number, lambda received, _: os.kill(pid, received))
code = replies.readline()
sys.exit(int(code) if code.strip() else 1)
