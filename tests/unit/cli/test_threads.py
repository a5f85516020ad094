"""``smart-agent threads list`` prints a table whose columns line up, whatever the ids' lengths."""

from smart_agent.cli.threads import table_lines


def test_threads_list_columns_line_up():
    rows = [
        {"thread_id": "apr1", "graph": "agent", "updated_at": "2026-11-23T17:15:01.7+00:00", "messages": 6,
         "first_user_line": "What is 37*43?"},
        {"thread_id": "0063dd0b-6d98-4b62-81de-01791b7d554b", "graph": None, "updated_at": None, "messages": 12,
         "first_user_line": None},
    ]
    header, first, second = table_lines(rows)
    assert header.split()[:2] == ["thread", "graph"]
    assert first.startswith("apr1 ") and "2026-11-23 17:15:01" in first and first.endswith("What is 37*43?")
    assert second.startswith("0063dd0b-6d98-4b62-81de-01791b7d554b  -")
    for col in ("graph", "last activity"):  # each column starts at the same offset on every line
        at = header.index(col)
        assert first[at - 2:at] == "  " and first[at] != " " and second[at - 2:at] == "  "
    assert first.index("agent") == second.index("  -  ") + 2 == header.index("graph")
