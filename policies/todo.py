"""Planning mode: the model keeps a todo list with the ``manage_todo_list`` tool (state
``todos``, a ``plan`` event per change)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class TodoSettings(Settings):
    """Todo list"""

    use_todo_list: bool = setting(
        False,
        help="Planning mode: the system prompt gains planning rules and the model gets the manage_todo_list "
        "tool; the list is kept in the state ('todos') and every change is a 'plan' event.",
        flag="--todo",
    )
