"""The embedding function of ``langgraph.json``'s ``store.index``: ``"./memory/langgraph_embed.py:embed"``.

The LangGraph server takes a ``module:function`` string for a provider name, so a custom function
is named by file path and this file is loaded on its own, outside the package: hence the absolute
import. The model loads on the first text embedded, not when the server starts.
"""

from importlib import import_module

# Looked up by name: mypy checks the repository folder, where the package has no `smart_agent`
# name, and an installed copy, where it has one; an import statement would need an ignore
# comment that one of the two reports as unused.
embed = import_module("smart_agent.memory.embeddings").embed_local

__all__ = ["embed"]
