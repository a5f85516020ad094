"""The ONNX Runtime encoder against the NumPy forward pass, and how the local model picks its
backend (memory/embeddings.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smart_agent.memory import onnx_bert
from smart_agent.memory.embeddings import EmbeddingConfigError, LocalSentenceEmbeddings, local_model_path
from smart_agent.memory.numpy_bert import NumpyBertEncoder

TEXTS = [
    "The user's favourite colour is teal.",
    "",
    "a",
    "Ünïcödé façade — naïve café 日本語 🙂",
    "word " * 400,  # truncated at the model's 256 tokens by both
    "What is my favourite colour?",
    *[f"Memory number {i}: the build server failed on step {i * 7}." for i in range(5)],
]


@pytest.fixture(scope="module")
def encoders() -> tuple[onnx_bert.OnnxBertEncoder, NumpyBertEncoder]:
    return onnx_bert.OnnxBertEncoder(local_model_path()), NumpyBertEncoder(local_model_path())


def test_onnx_vectors_match_the_numpy_forward_pass(encoders):
    onnx, numpy = encoders
    a, b = onnx.encode(TEXTS), numpy.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-5
    assert float((a * b).sum(1).min()) > 0.99999
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_padding_does_not_change_a_vector(encoders):
    """A short text batched with a long one (padded, masked) gets the vector it gets alone; batches
    split by ``batch_size`` give the same vectors as one batch."""
    onnx, _ = encoders
    alone = onnx.encode(["short one"])[0]
    together = onnx.encode(["word " * 100, "short one", "a bit longer than the short one"])
    assert float(np.abs(together[1] - alone).max()) < 1e-5
    assert float(np.abs(onnx.encode(TEXTS, batch_size=3) - onnx.encode(TEXTS)).max()) < 1e-5
    assert onnx.encode([]).shape == (0, 384)


def test_auto_prefers_onnx_then_numpy(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_EMBEDDING_BACKEND", raising=False)
    emb = LocalSentenceEmbeddings()
    emb.encode(["hello"])
    assert emb.active_backend == "onnx"
    monkeypatch.setattr(onnx_bert, "available", lambda: False)  # onnxruntime not installed
    emb = LocalSentenceEmbeddings()
    emb.encode(["hello"])
    assert emb.active_backend == "numpy"
    with pytest.raises(EmbeddingConfigError, match="onnxruntime"):
        LocalSentenceEmbeddings(backend="onnx").encode(["hello"])


@pytest.mark.parametrize(("value", "backend"), [("numpy", "numpy"), ("ONNX", "onnx"), ("onnxruntime", "onnx")])
def test_the_environment_picks_the_backend(monkeypatch, value, backend):
    monkeypatch.setenv("SMART_AGENT_EMBEDDING_BACKEND", value)
    emb = LocalSentenceEmbeddings()
    emb.encode(["hello"])
    assert emb.active_backend == backend


def test_an_unknown_backend_is_refused(monkeypatch):
    monkeypatch.setenv("SMART_AGENT_EMBEDDING_BACKEND", "tensorflow")
    with pytest.raises(EmbeddingConfigError, match="tensorflow"):
        LocalSentenceEmbeddings().encode(["hello"])
    with pytest.raises(EmbeddingConfigError, match="Unknown embedding backend"):
        LocalSentenceEmbeddings(backend="tensorflow")


def test_onnx_refuses_a_model_it_cannot_compute(tmp_path: Path, monkeypatch):
    """Another architecture is never run by the BERT graph: onnx and numpy say so, auto falls back
    to sentence-transformers (not loaded here)."""
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes(b"")
    (folder / "config.json").write_text(json.dumps({"model_type": "roberta", "hidden_act": "gelu"}))
    assert not onnx_bert.supported(folder)
    for backend in ("onnx", "numpy"):
        with pytest.raises(EmbeddingConfigError, match="sentence-transformers"):
            LocalSentenceEmbeddings(str(folder), backend=backend).encode(["hello"])
    monkeypatch.delenv("SMART_AGENT_EMBEDDING_BACKEND", raising=False)
    assert LocalSentenceEmbeddings(str(folder))._choose_backend(str(folder)) == "sentence-transformers"
