"""The memory's local embedding backends agree: the default ONNX Runtime graph
(memory/onnx_bert.py), the NumPy forward pass (memory/numpy_bert.py) and sentence-transformers
on torch. In-process, but torch and sentence-transformers take 10-30 s to load, so the test
lives with the slow ones (it used to be in tests/unit/memory/test_store.py, marked e2e)."""

from __future__ import annotations

import numpy as np

from smart_agent.memory.embeddings import LOCAL_DIM, LocalSentenceEmbeddings


def test_onnx_and_numpy_backends_match_sentence_transformers(local_model):
    """The default ONNX graph and the NumPy forward pass give sentence-transformers' vectors."""
    texts = [
        "The user's favourite colour is teal.",
        "",
        "a",
        "Ünïcödé façade — naïve café 日本語 🙂",
        "word " * 400,  # truncated at 256 tokens by both
        "What is my favourite colour?",
        *[f"Memory number {i}: the build server failed on step {i * 7}." for i in range(4)],
    ]
    st = LocalSentenceEmbeddings(backend="sentence-transformers")
    a = local_model.encode(texts)
    b = st.encode(texts)
    assert st.active_backend == "sentence-transformers"
    assert a.shape == b.shape == (len(texts), LOCAL_DIM)
    assert float(np.abs(a - b).max()) < 1e-4
    assert float((a * b).sum(1).min()) > 0.99999
    assert local_model.active_backend == "onnx"
    c = LocalSentenceEmbeddings(backend="numpy").encode(texts)
    assert float(np.abs(c - b).max()) < 1e-4
    assert float((c * b).sum(1).min()) > 0.99999
