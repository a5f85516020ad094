"""Long-term memory: FAISS + SQLite ``BaseStore`` with a local embedding model.

* ``store.py`` -- ``FaissMemoryStore`` (LangGraph ``BaseStore`` with ``index_config``, one vector per
  indexed field; ``remember``/``recall``), ``user_namespace``, ``RankingConfig``; ``open_stores.py`` --
  ``open_store``, the process's open stores (one per folder and model). The store is composed of
  parts that own their state and lock: ``rows.py`` (``RowTable``: the SQLite database),
  ``index_cache.py`` + ``ann.py`` (``VectorIndex``: the FAISS indexes), ``vectors.py``
  (``Embedder``: the model, batched, recent vectors reused); ``ranking.py`` (``RankingConfig``,
  results), ``matching.py`` (namespaces, filters);
* ``background.py`` -- the memory threads: writes in order, recalls beside them;
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
