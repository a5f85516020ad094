"""The column-major NumPy forward pass against a plain row-major reference."""

from __future__ import annotations

import math
import mmap
from pathlib import Path

import numpy as np
import pytest

from smart_agent.memory import numpy_bert
from smart_agent.memory.embeddings import local_model_path


@pytest.fixture(scope="module")
def encoder() -> numpy_bert.NumpyBertEncoder:
    return numpy_bert.NumpyBertEncoder(local_model_path())


def reference(folder: str, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The textbook computation in float64: tokens as rows, ``x @ W.T``, exact erf, one sequence at a time."""
    from safetensors.numpy import load_file

    w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in load_file(f"{folder}/model.safetensors").items()}
    erf = np.frompyfunc(math.erf, 1, 1)

    def norm(x: np.ndarray, p: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def dense(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    out = []
    for seq, m in zip(ids, mask, strict=True):
        e = "embeddings."
        x = w[e + "word_embeddings.weight"][seq] + w[e + "position_embeddings.weight"][: len(seq)]
        x = norm(x + w[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (dense(x, p + "attention.self." + n).reshape(len(seq), 12, 32) for n in ("query", "key", "value"))
            s = np.einsum("ihd,jhd->hij", q, k) / math.sqrt(32)
            s[:, :, m == 0] = -np.inf  # padding is never attended to
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx = np.einsum("hij,jhd->ihd", s / s.sum(-1, keepdims=True), v).reshape(len(seq), 384)
            x = norm(dense(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + np.asarray(erf(h / math.sqrt(2.0)), dtype=np.float64))
            x = norm(dense(h, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = x[m == 1].mean(0)
        out.append(pooled / np.linalg.norm(pooled))
    return np.array(out)


def test_forward_matches_a_row_major_reference_with_padding(encoder):
    texts = ["hi", "The build server failed on step seven.", "Where did I put the keys to the red car yesterday?"]
    encs = [encoder.tokenizer.encode(t).ids for t in texts]
    length = max(map(len, encs)) + 3  # every row padded, the longest too
    ids = np.zeros((len(texts), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encs):
        ids[row, : len(e)] = e
        mask[row, : len(e)] = 1
    assert len(set(map(len, encs))) == 3 and encoder.hidden == 384 and encoder.layers == 6
    ref = reference(local_model_path(), ids, mask)
    # One padded batch (many columns: one product per weight) ...
    batch = encoder._forward(ids, mask)
    assert float(np.abs(batch - ref).max()) < 1e-5
    # ... each sequence alone and unpadded (few columns: weights applied in row blocks) ...
    for row, e in enumerate(encs):
        alone = encoder._forward(ids[row : row + 1, : len(e)], mask[row : row + 1, : len(e)])
        assert float(np.abs(alone[0] - ref[row]).max()) < 1e-5
    # ... and through encode, which pads short queries to a multiple of 4 tokens.
    assert float(np.abs(encoder.encode(texts) - ref).max()) < 1e-5
    assert float(np.abs(encoder.encode(texts[1:2])[0] - ref[1]).max()) < 1e-5


def test_dense_in_row_blocks_equals_one_product():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(1536, 384)).astype(np.float32)
    b = rng.normal(size=(1536, 1)).astype(np.float32)
    for tokens in (1, 3, 8, 12, 20, 21, 40):
        x = rng.normal(size=(384, tokens)).astype(np.float32)
        rows = numpy_bert._block_rows(1536, 384, tokens)
        assert 1536 % rows == 0 and (rows == 1536 or rows * 384 * tokens <= numpy_bert._SMALL_GEMM)
        got = numpy_bert._dense(w, b, x)
        want = w.astype(np.float64) @ x.astype(np.float64) + b
        assert got.shape == (1536, tokens) and np.abs(got - want).max() < 1e-3


def test_gelu_matches_erf():
    x = np.linspace(-12, 12, 7 * 30_000, dtype=np.float32).reshape(-1, 7)
    want = 0.5 * x.astype(np.float64) * (1 + np.frompyfunc(math.erf, 1, 1)(x / math.sqrt(2)).astype(np.float64))
    got = numpy_bert._gelu_(x.copy())
    assert np.abs(got - want).max() < 2e-6


def test_the_dense_weights_are_stacked_into_one_huge_page_mapping(encoder, monkeypatch):
    rng = np.random.default_rng(1)
    weights = [rng.normal(size=(384, 384)).astype(np.float32) for _ in range(3)]
    parts = [weights, [rng.normal(size=384).astype(np.float32)]]
    take = numpy_bert._array_source(sum(a.nbytes for field in parts for a in field) + 64 * len(parts))
    qkv, bias = (numpy_bert._stacked(field, take) for field in parts)
    assert qkv.shape == (1152, 384) and np.array_equal(qkv, np.concatenate(parts[0]))
    assert bias.shape == (384, 1) and np.array_equal(bias[:, 0], parts[1][0])
    assert all(a.flags.c_contiguous and a.flags.writeable and a.ctypes.data % 64 == 0 for a in (qkv, bias))
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")  # Linux with huge pages: one mapping
    if hasattr(mmap, "MADV_HUGEPAGE") and thp.exists() and "[never]" not in thp.read_text():
        assert _root(qkv) is _root(bias) and type(_root(qkv)).__name__ == "mmap"
        roots = {id(_root(a)) for layer in encoder._layers for a in layer}
        assert len(roots) == 1 and encoder._layers[0].qkv_w.shape == (1152, 384)
    # Without the advice (another system): plain arrays, the same values.
    monkeypatch.delattr(numpy_bert.mmap, "MADV_HUGEPAGE", raising=False)
    plain = numpy_bert._stacked(parts[0], numpy_bert._array_source(10**9))
    assert type(_root(plain)).__name__ == "ndarray" and np.array_equal(plain, qkv)


def _root(array: np.ndarray) -> object:
    """The object an array's memory comes from (through views and memoryviews)."""
    base: object = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base.obj if isinstance(base, memoryview) else base
