#!/usr/bin/env python3
"""A minimal MCP stdio server that reads its input as the Python MCP SDK
(and FastMCP) does: a TextIOWrapper over stdin.buffer with universal
newlines, so a CR, an LF or a CRLF each end a line. Lines that are not
JSON-RPC are skipped, as the SDK skips them.

Every tools/call it executes appends the tool's name and a newline to the
file named by SLUICE_TEST_LOG: the ground truth of what ran. It offers the
tools echo and send_email, and big, whose result is a text of as many Qs as
its argument bytes says (a large tool result, such as an image)."""

import io
import json
import os
import sys

LOG = os.environ["SLUICE_TEST_LOG"]
TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "send_email", "big")
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "unl-python", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name")
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(f"{name}\n")
        if name == "big":
            size = int((params.get("arguments") or {}).get("bytes", 0))
            return {"content": [{"type": "text", "text": "Q" * size}]}
        return {"content": [{"type": "text", "text": f"ran {name}"}]}
    if method == "ping":
        return {}
    return None


def main():
    # newline=None (the default) is universal newlines, as in
    # mcp.server.stdio.stdio_server.
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    for line in stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg:
            continue
        result = answer(msg)
        if "id" not in msg:
            continue
        if result is None:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


main()
