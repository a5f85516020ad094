"""FaissMemoryStore across processes: a subprocess writes, this process reads (the real local
model and the fake table embeddings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from memory_fakes import TableEmbeddings

from smart_agent.memory.store import (
    FaissMemoryStore,
    user_namespace,
)

TESTS = Path(__file__).resolve().parents[1]


WRITER = """
import sys
sys.path.insert(0, {tests!r})
from smart_agent.memory.store import FaissMemoryStore, user_namespace
s = FaissMemoryStore({path!r}{emb})
r = s.remember(user_namespace("alice"), "Alice's favourite colour is teal.", importance=0.9)
s.remember(user_namespace("bob"), "Bob is allergic to peanuts.")
print(r.key)
"""


def test_persistence_across_processes_with_the_real_model(tmp_path, local_model):
    """A subprocess writes with the local model; this process reads it back."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    code = WRITER.format(tests=str(TESTS), path=str(tmp_path), emb="")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    key = out.stdout.strip().splitlines()[-1]
    s = FaissMemoryStore(tmp_path)  # "local", already loaded in this process
    hits = s.recall(user_namespace("alice"), "What colour does Alice like?", k=3)
    assert [h.key for h in hits][:1] == [key]
    assert hits[0].importance == pytest.approx(0.9) and hits[0].similarity > 0.5
    assert s.recall(user_namespace("carol"), "colour") == []
    s.close()


def test_a_second_process_sees_writes_of_the_first(tmp_path):
    """Two stores on one folder (as two processes): the cached index is refreshed."""
    a = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    b = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    a.remember(("memories", "u"), "fact one")
    assert [r.text for r in b.recall(("memories", "u"), "fact one")] == ["fact one"]  # b caches its index
    a.remember(("memories", "u"), "fact two")
    assert "fact two" in [r.text for r in b.recall(("memories", "u"), "fact two")]
    b.forget(("memories", "u"), b.recall(("memories", "u"), "fact one", k=1)[0].key)
    assert [r.text for r in a.recall(("memories", "u"), "fact one", k=5)] == ["fact two"]
    code = WRITER.format(
        tests=str(TESTS), path=str(tmp_path), emb=", embeddings=__import__('memory_fakes').TableEmbeddings()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert a.recall(user_namespace("bob"), "Bob is allergic to peanuts.", k=1)[0].text == "Bob is allergic to peanuts."
    a.close()
    b.close()


RUN_AND_EXIT = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from types import SimpleNamespace
from langchain_core.messages import AIMessage, HumanMessage
from memory_fakes import TableEmbeddings
from smart_agent.config.context import Context
from smart_agent.memory.store import FaissMemoryStore
from smart_agent.nodes.memory import memory_write
store = FaissMemoryStore({path!r}, embeddings=TableEmbeddings())
runtime = SimpleNamespace(context=Context(user_id="u"), store=store)
state = {{"messages": [HumanMessage("What is 2+2?"), AIMessage("4")], "answer": "4"}}
asyncio.run(memory_write(state, runtime))
print("returned")  # then the interpreter exits: no close, no drain
"""


def test_a_write_queued_by_the_last_run_survives_a_normal_exit(tmp_path):
    """memory_write queues the write on the memory thread; the process exits right after the run
    without closing the store: the write still lands (the thread is joined at exit)."""
    code = RUN_AND_EXIT.format(tests=str(TESTS), path=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "returned", out.stderr
    s = FaissMemoryStore(tmp_path, embeddings=TableEmbeddings())
    (item,) = s.items(user_namespace("u"))
    assert item.value["text"] == "Task: What is 2+2?\nAnswer: 4"
    s.close()
