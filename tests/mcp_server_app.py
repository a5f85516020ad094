"""A small MCP server for the tests (FastMCP from the ``mcp`` package), over stdio or
streamable HTTP:

    python mcp_server_app.py                   # stdio
    python mcp_server_app.py --http PORT       # streamable HTTP on 127.0.0.1:PORT/mcp

Tools: ``add(a, b)``; ``note(text)`` appends a line to $MCP_NOTES (a side effect);
``crash()`` ends the server process in the middle of the call. The process appends its pid
to $MCP_PID_FILE when it starts.
"""

import os
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("test-tools", host="127.0.0.1", log_level="WARNING")


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total) if total == int(total) else total)


@server.tool()
def note(text: str) -> str:
    """Append a line of text to the notes file."""
    with open(os.environ["MCP_NOTES"], "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return f"noted: {text}"


@server.tool()
def crash() -> str:
    """End the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a", encoding="utf-8") as fh:  # one line per start
            fh.write(f"{os.getpid()}\n")
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.settings.port = int(sys.argv[2])
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")
