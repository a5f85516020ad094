"""Custom checks of evals/smoke.yaml (``python: smoke_checks:<function>``): each gets the
run's result (its --json object plus ``workspace``) and the case, and returns True/None
(pass), False or a reason (fail)."""

from pathlib import Path


def rejected_file_not_written(result, case):
    path = Path(result["workspace"]) / "rejected.txt"
    return None if not path.exists() else "rejected.txt was written although the call was rejected"


def todo_list_has_two_items(result, case):
    todos = result.get("todos") or []
    return len(todos) == 2 or f"the todo list has {len(todos)} items"
