"""A hostile MCP server for the attack tests: JSON-RPC over stdio, spoken by hand (stdlib only).

    python mcp_hostile_server.py [MODE]

It answers ``initialize`` and ``tools/list`` like a real server, then misbehaves on command:
each tool is one misbehaviour, and MODE (the first argument) one at start.

Tools (``tools/call``):

* ``echo(text)``: answers ``text`` (the well-behaved control);
* ``truncated``: a reply cut short (not valid JSON), and nothing more;
* ``noise``: a line that is not JSON at all (a stray print), then the answer "after the noise";
* ``bad_jsonrpc``: a JSON line with the call's id that is not a JSON-RPC message;
* ``nested``: a reply 200,000 levels deep;
* ``surrogate``: a reply whose text is a lone surrogate escape (``\\ud800``);
* ``rpc_error``: JSON-RPC error -32000 "database unavailable" (a server's own error);
* ``bad_result``: a result whose ``content`` is not a list;
* ``huge_reply``: a 50 MB reply;
* ``stderr``: writes log lines to its stderr, then answers "logged";
* ``stderr_flood``: writes 12 MB to its stderr, then answers "flooded";
* ``die``: ends the process in the middle of the call.

Modes: ``huge_list`` (a 50 MB tool list), ``endless_pages`` (a tool list whose pages never
end), ``slow_list`` (the tool list trickles in, one byte every 50 ms, forever),
``garbage_at_start`` (a banner and a broken JSON line before the answer to ``initialize``).
The process appends its pid to $MCP_PID_FILE when it starts (when set).
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
OUT = sys.stdout.buffer
BIG = 50_000_000
DEPTH = 200_000

TOOLS = ["echo", "truncated", "noise", "bad_jsonrpc", "nested", "surrogate", "rpc_error", "bad_result", "huge_reply",
         "stderr", "stderr_flood", "die"]


def send(raw: bytes | str) -> None:
    OUT.write(raw if isinstance(raw, bytes) else raw.encode())
    OUT.write(b"\n")
    OUT.flush()


def reply(mid, result) -> None:
    send(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}))


def text_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def tool(name: str) -> dict:
    props = {"text": {"type": "string"}} if name == "echo" else {}
    return {"name": name, "description": f"hostile tool {name}", "inputSchema": {"type": "object", "properties": props}}


def list_tools(mid, params: dict) -> None:
    if MODE == "huge_list":
        filler = "x" * BIG
        reply(mid, {"tools": [{**tool("echo"), "description": filler}]})
    elif MODE == "endless_pages":
        page = int((params or {}).get("cursor") or 0)
        tools = [{**tool("echo"), "name": f"t{page}_{i}"} for i in range(50)]
        reply(mid, {"tools": tools, "nextCursor": str(page + 1)})
    elif MODE == "slow_list":
        OUT.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"tools": [' % mid)
        OUT.flush()
        while True:
            OUT.write(b" ")
            OUT.flush()
            time.sleep(0.05)
    else:
        reply(mid, {"tools": [tool(name) for name in TOOLS]})


def call_tool(mid, params: dict) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        reply(mid, text_result(str(args.get("text", ""))))
    elif name == "truncated":
        send(f'{{"jsonrpc": "2.0", "id": {mid}, "result": {{"content": [{{"type": "text", "text": "cut sh')
    elif name == "noise":
        send("this is not JSON {{{")
        reply(mid, text_result("after the noise"))
    elif name == "bad_jsonrpc":
        send(json.dumps({"jsonrpc": "1.0", "id": mid, "answer": 42}))
    elif name == "nested":
        send(f'{{"jsonrpc": "2.0", "id": {mid}, "result": {{"content": ' + "[" * DEPTH + "]" * DEPTH + "}}")
    elif name == "surrogate":
        reply(mid, text_result("half \ud800 a pair"))  # (json.dumps writes it as the escape \\ud800)
    elif name == "rpc_error":
        send(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "database unavailable"}}))
    elif name == "bad_result":
        reply(mid, {"content": "not a list", "isError": "maybe"})
    elif name == "huge_reply":
        reply(mid, text_result("y" * BIG))
    elif name == "stderr":
        for i in range(3):
            sys.stderr.write(f"hostile server log line {i}\n")
        sys.stderr.flush()
        reply(mid, text_result("logged"))
    elif name == "stderr_flood":
        for _ in range(12):
            sys.stderr.write("e" * 999_999 + "\n")
        sys.stderr.flush()
        reply(mid, text_result("flooded"))
    elif name == "die":
        os._exit(3)
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"no tool {name}"}}))


def main() -> None:
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            if MODE == "garbage_at_start":
                send("hostile server starting up")
                send('{"jsonrpc": "2.0", "broken": ')
            reply(mid, {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "0"}})
        elif method == "tools/list":
            list_tools(mid, params)
        elif method == "tools/call":
            call_tool(mid, params)
        elif method == "ping":
            reply(mid, {})
        elif mid is not None:
            send(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}}))


if __name__ == "__main__":
    main()
