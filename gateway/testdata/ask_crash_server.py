#!/usr/bin/env python3
"""A minimal MCP stdio server that asks its client questions, as a server
using elicitation does, numbering its requests from 0 in each process, as
the MCP SDKs do. Its tools: ask (asks "Subscribe to the newsletter?" and
answers once the client has), crash (the process exits at once) and
delete (asks "Delete every file?" and, if the client accepts, appends
"deleted" to the file named by SLUICE_TEST_LOG: the ground truth of what
the user agreed to)."""

import json
import os
import sys

LOG = os.environ["SLUICE_TEST_LOG"]
TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object"}}
    for name in ("ask", "crash", "delete")
]
QUESTIONS = {"ask": "Subscribe to the newsletter?", "delete": "Delete every file?"}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main():
    next_id = 0
    asked = {}  # request id -> (tool, the call's id)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, params = msg.get("method"), msg.get("params") or {}
        if method is None and "id" in msg:
            tool, call = asked.pop(msg["id"], (None, None))
            if tool is None:
                continue
            action = (msg.get("result") or {}).get("action")
            if tool == "delete" and action == "accept":
                with open(LOG, "a", encoding="utf-8") as f:
                    f.write("deleted\n")
            send({"jsonrpc": "2.0", "id": call,
                  "result": {"content": [{"type": "text", "text": f"{tool}: {action}"}]}})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "ask-crash", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = params.get("name")
            if name == "crash":
                sys.exit(1)
            asked[next_id] = (name, msg["id"])
            send({"jsonrpc": "2.0", "id": next_id, "method": "elicitation/create", "params": {
                "message": QUESTIONS[name],
                "requestedSchema": {"type": "object", "properties": {}}}})
            next_id += 1


main()
