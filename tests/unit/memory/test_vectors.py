"""The embedder's queue (``memory/vectors.py``): waiting requests are encoded oldest first, a few
texts a call for a model that computes in the process, all of them for one behind an API, each
request whole, and every caller gets its own texts' vectors."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from memory_fakes import hashed

from smart_agent.memory.embeddings import LocalSentenceEmbeddings
from smart_agent.memory.rows import RowTable
from smart_agent.memory.vectors import CALL_TEXTS, MAX_BATCH, Embedder


class GatedEmbeddings(Embeddings):
    """Records the texts of each model call; the first call waits until ``release`` is set, so
    requests pile up in the queue meanwhile."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.started.set()
        assert self.release.wait(10), "the test never released the model"
        return [hashed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture
def gated(tmp_path):
    rows = RowTable(tmp_path / "memory.sqlite")
    model = GatedEmbeddings()
    yield model, Embedder(model, "gated", rows)
    model.release.set()
    rows.close()


def test_waiting_requests_are_encoded_oldest_first_a_few_texts_a_call_never_split(gated):
    model, emb = gated
    emb.in_process = True  # (as the local model: its time grows with the texts of a call)
    first = emb.submit(["q0"])
    assert model.started.wait(10)  # the model is busy with q0: the rest wait in the queue
    singles = [emb.submit([f"q{i}"]) for i in range(1, 20)]
    big_texts = [f"doc{i}" for i in range(CALL_TEXTS + 2)]
    big = emb.submit(big_texts)
    tail = [emb.submit(["t1", "t2"]), emb.submit(["q3", "t3"])]  # q3: waiting in an earlier call
    model.release.set()

    for future, texts in [(first, ["q0"]), *((f, [f"q{i}"]) for i, f in enumerate(singles, 1)),
                          (big, big_texts), (tail[0], ["t1", "t2"]), (tail[1], ["q3", "t3"])]:
        got = future.result(10)
        want = np.asarray([hashed(t) for t in texts], dtype="float32")
        assert np.allclose(got, want / np.linalg.norm(want, axis=1, keepdims=True), atol=1e-6)
    q = [f"q{i}" for i in range(20)]
    assert model.calls == [
        ["q0"],
        q[1:9],  # CALL_TEXTS = 8 waiting texts a call, oldest first
        q[9:17],
        q[17:20],  # the 10-text request does not fit beside these three ...
        big_texts,  # ... and goes alone, whole
        ["t1", "t2", "t3"],  # q3's vector came from the earlier call: not encoded twice
    ]
    assert emb.encode_calls == len(model.calls)


def test_a_model_error_reaches_every_caller_of_that_call_and_the_queue_goes_on(gated):
    model, emb = gated
    gate = model.embed_documents

    def failing(texts: list[str]) -> list[list[float]]:
        if "bad" in texts:
            model.calls.append(list(texts))
            raise RuntimeError("model down")
        return gate(texts)

    model.embed_documents = failing
    first = emb.submit(["q0"])
    assert model.started.wait(10)
    same_call = [emb.submit(["bad"]), emb.submit(["x"])]
    model.release.set()
    assert first.result(10).shape == (1, len(hashed("q0")))
    for future in same_call:
        with pytest.raises(RuntimeError, match="model down"):
            future.result(10)
    assert emb.submit(["fine"]).result(10).shape == (1, len(hashed("fine")))
    assert model.calls == [["q0"], ["bad", "x"], ["fine"]]


def test_a_model_behind_an_api_takes_every_waiting_text_in_one_call(gated):
    """A call to an API costs a round trip whatever its size: no calls of a few there."""
    model, emb = gated
    first = emb.submit(["q0"])
    assert model.started.wait(10)
    waiting = [emb.submit([f"q{i}"]) for i in range(1, 20)]
    model.release.set()
    for future in [first, *waiting]:
        future.result(10)
    assert model.calls == [["q0"], [f"q{i}" for i in range(1, 20)]]
    assert emb.in_process is False


def test_the_local_model_is_found_to_compute_in_the_process_without_loading_it(tmp_path):
    rows = RowTable(tmp_path / "memory.sqlite")
    try:
        local, api = Embedder("local", "local", rows), Embedder(GatedEmbeddings(), "gated", rows)
        model = local.embeddings
        assert isinstance(model, LocalSentenceEmbeddings)
        loaded = model.loaded  # (the model is shared process-wide: another test may have loaded it)
        assert (local._texts_per_call(), api._texts_per_call()) == (CALL_TEXTS, MAX_BATCH)
        assert local.in_process and api.in_process is False and model.loaded == loaded
    finally:
        rows.close()
