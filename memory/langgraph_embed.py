"""The embedding function of ``langgraph.json``'s ``store.index``: ``"./memory/langgraph_embed.py:embed"``.

The LangGraph server takes a ``module:function`` string for a provider name, so a custom function
is named by file path and this file is loaded on its own, outside the package: hence the absolute
import. The model loads on the first text embedded, not when the server starts.
"""

# mypy checks the repository folder, in which the package has no `smart_agent` name: hence the ignore
from smart_agent.memory.embeddings import embed_local as embed  # type: ignore[import-not-found]

__all__ = ["embed"]
