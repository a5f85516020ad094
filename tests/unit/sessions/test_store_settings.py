"""The Postgres backend's settings: the pool size variable and what every pool connection sets."""

from __future__ import annotations

import pytest

from smart_agent.config import settings
from smart_agent.sessions.store import PG_EF_SEARCH, _hnsw_settings, is_postgres, postgres_index


def test_pool_size_default_value_and_one_line_errors(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_DB_POOL_SIZE", raising=False)
    assert settings.db_pool_size() == 10
    monkeypatch.setenv("SMART_AGENT_DB_POOL_SIZE", " 3 ")
    assert settings.db_pool_size() == 3
    for bad, says in (("0", "between 1 and 1000"), ("1001", "between 1 and 1000"), ("many", "whole number")):
        monkeypatch.setenv("SMART_AGENT_DB_POOL_SIZE", bad)
        with pytest.raises(ValueError, match=f"SMART_AGENT_DB_POOL_SIZE must be .*{says}"):
            settings.db_pool_size()


def test_hnsw_scans_are_widened_and_iterative_where_pgvector_can():
    assert PG_EF_SEARCH > 50  # more rows per scan than the candidates one recall asks for
    assert _hnsw_settings("0.6.2") == [f"SET hnsw.ef_search = {PG_EF_SEARCH}"]
    assert _hnsw_settings(None) == [f"SET hnsw.ef_search = {PG_EF_SEARCH}"]
    assert _hnsw_settings("0.8.0")[1:] == ["SET hnsw.iterative_scan = relaxed_order"]
    assert _hnsw_settings("1.0") == _hnsw_settings("0.8.1")


def test_postgres_urls_and_the_index_defaults():
    assert is_postgres("postgresql://h/db") and is_postgres("postgres://h/db")
    assert not is_postgres("/tmp/x.sqlite") and not is_postgres(None)
    index = postgres_index({"dims": 384, "fields": ["text"]})
    assert index["ann_index_config"] == {"kind": "hnsw", "m": 32, "ef_construction": 200}
    assert index["distance_type"] == "cosine"
    assert postgres_index({"dims": 8, "distance_type": "l2"})["distance_type"] == "l2"
