"""Long-term memory: FAISS + SQLite ``BaseStore`` with a local embedding model.

* ``store.py`` -- ``FaissMemoryStore`` (LangGraph ``BaseStore``; ``remember``/``recall``),
  ``user_namespace``, ``RankingConfig``; ``open_stores.py`` -- ``open_store``, the process's
  open stores (one per folder and model);
  its parts: ``vectors.py`` (embedding, FAISS indexes), ``rows.py`` (``batch``,
  SQLite reads/writes), ``ranking.py`` (``RankingConfig``, results), ``matching.py``
  (namespaces, filters);
* ``integrity.py`` -- refuses files that are not a memory database, skips damaged rows;
* ``embeddings.py`` -- the bundled all-MiniLM-L6-v2 (``"local"``) or any ``provider:model``;
* ``numpy_bert.py`` -- the NumPy forward pass used for the local model;
* ``backend.py`` -- recall/remember/forget on any ``BaseStore`` with a vector index (FAISS,
  ``InMemoryStore(index=...)``, ``AsyncPostgresStore`` + pgvector, a LangGraph server's store):
  ``asearch``/``aput`` plus this project's re-ranking, consolidation and pruning;
* ``transfer.py`` -- JSON Lines export and import between stores;
* ``langgraph_embed.py`` -- the embedding function ``langgraph.json``'s ``store.index`` names;
* ``service.py`` -- glue for nodes/tools/CLI (which store, which namespace, what text);
* the commands (``smart-agent memory list|search|forget|stats|export|import``) are in ``cli/memory.py``.

Nothing heavy is imported here: FAISS and the model load on first use.
See docs/memory.md.
"""
