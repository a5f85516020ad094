"""The graphs ``langgraph dev`` serves (langgraph.json): each graph module builds its ``graph``
on first access (``run_scope.served_graph``), and the server reads a module's ``__dict__``, not
its attributes, so they are built here, when the server imports this module."""

from __future__ import annotations

from .agent import graph as agent
from .dual import graph as dual
from .fleet import graph as fleet
from .planner import graph as planner

__all__ = ["agent", "dual", "fleet", "planner"]
