"""What surrounds a run: its events, its MCP tools, approvals, redaction of what it writes out."""
