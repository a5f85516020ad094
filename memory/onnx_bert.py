"""BERT sentence encoders (all-MiniLM-L6-v2 and kin) run by ONNX Runtime.

Why: under many concurrent runs the query embeddings are on every run's critical path. The
NumPy forward pass (``numpy_bert.py``) makes ~50 BLAS calls a batch on one thread, each giving
up the GIL and taking it back from a busy event loop; ONNX Runtime computes a whole batch in one
call (one GIL release) on up to two cores: a batch of 32 sentences of ~25 tokens takes ~2.5 ms a
sentence against ~7.4 ms in NumPy, and 32 concurrent runs with memory on measured 0.68x
``create_agent``'s throughput against 0.55x (``docs/benchmarks.md``).

No ONNX file is shipped or exported: the graph is written here, operator by operator, from
the same ``model.safetensors`` (no pickle, no torch) that ``numpy_bert.py`` reads, and handed
to ONNX Runtime in memory. The word-embedding lookup stays in NumPy (a row gather); position
and token-type embeddings, the layers, and nothing else run in the graph; mean pooling and
normalization are NumPy again, as in ``numpy_bert.py``. ``tests/unit/memory/test_onnx_bert.py``
checks the vectors against the NumPy encoder.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .numpy_bert import mean_pooled, padded_batches, read_model, supported

__all__ = ["OnnxBertEncoder", "available", "supported"]

OPSET = 17  # LayerNormalization
# Threads ONNX Runtime computes one batch with (its own pool, not BLAS's); at most two.
MAX_THREADS = 2


def available() -> bool:
    """Whether ``onnxruntime`` and ``onnx`` can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _graph(w: dict[str, np.ndarray], cfg: dict[str, Any]) -> tuple[Any, dict[str, np.ndarray]]:
    """The encoder as an ONNX model -- input ``x`` [n, length, hidden] (word embeddings) and
    ``mask`` [n, length] (float, 1 on real tokens); output ``h`` [n, length, hidden] -- and its
    weights by name: the model declares them as external data, handed to ONNX Runtime as arrays
    (no copy into the model's bytes)."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = int(cfg["hidden_size"])
    heads = int(cfg["num_attention_heads"])
    hd = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    nodes: list[Any] = []
    inits: list[Any] = []
    external: dict[str, np.ndarray] = {}
    counter = iter(range(1 << 30))

    def const(value: Any, name: str | None = None) -> str:
        name = name or f"c{next(counter)}"
        array = np.ascontiguousarray(value)
        if array.size < 1024:
            inits.append(numpy_helper.from_array(array, name))
            return name
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value=name)  # (never read: add_external_initializers)
        inits.append(tensor)
        external[name] = array.astype(np.float32, copy=False)
        return name

    def op(kind: str, *inputs: str, **attrs: Any) -> str:
        out = f"t{next(counter)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def dense(x: str, name: str) -> str:  # x @ W.T + b, W [out, in] as stored
        product = op("MatMul", x, const(w[name + ".weight"].T, name + ".wt"))
        return op("Add", product, const(w[name + ".bias"], name + ".b"))

    def norm(x: str, name: str) -> str:
        return op("LayerNormalization", x, const(w[name + ".weight"]), const(w[name + ".bias"]), axis=-1, epsilon=eps)

    # Positions 0..length-1 (+ token type 0): the first `length` rows of one table.
    pos = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    length = op("Slice", op("Shape", "x"), const(np.array([1])), const(np.array([2])))
    x = op("Add", "x", op("Slice", const(pos), const(np.array([0])), length, const(np.array([0]))))
    x = norm(x, "embeddings.LayerNorm")
    # Additive mask over keys, [n, 1, 1, length]: 0 on tokens, a large negative on padding.
    bias = op("Mul", op("Sub", const(np.float32(1.0)), "mask"), const(np.float32(np.finfo(np.float32).min)))
    bias = op("Unsqueeze", bias, const(np.array([1, 2])))
    split_heads = const(np.array([0, 0, heads, hd]))
    merge_heads = const(np.array([0, 0, hidden]))
    scale = const(np.float32(1.0 / math.sqrt(hd)))
    for i in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        q, k, v = (
            op("Reshape", dense(x, p + f"attention.self.{n}"), split_heads) for n in ("query", "key", "value")
        )  # [n, length, heads, hd]
        scores = op("MatMul", op("Transpose", q, perm=[0, 2, 1, 3]), op("Transpose", k, perm=[0, 2, 3, 1]))
        scores = op("Softmax", op("Add", op("Mul", scores, scale), bias), axis=-1)
        ctx = op("MatMul", scores, op("Transpose", v, perm=[0, 2, 1, 3]))  # [n, heads, length, hd]
        ctx = op("Reshape", op("Transpose", ctx, perm=[0, 2, 1, 3]), merge_heads)
        x = norm(op("Add", dense(ctx, p + "attention.output.dense"), x), p + "attention.output.LayerNorm")
        up = dense(x, p + "intermediate.dense")  # erf GELU: 0.5 u (1 + erf(u / sqrt 2))
        gelu = op("Mul", op("Mul", up, const(np.float32(0.5))),
                  op("Add", op("Erf", op("Div", up, const(np.float32(math.sqrt(2.0))))), const(np.float32(1.0))))
        x = norm(op("Add", dense(gelu, p + "output.dense"), x), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["h"]))
    graph = helper.make_graph(
        nodes,
        "bert",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "length", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["n", "length"])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", "length", hidden])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8), external


class OnnxBertEncoder:
    """Mean-pooled, L2-normalized BERT sentence embeddings computed by ONNX Runtime (float32):
    the same vectors as :class:`numpy_bert.NumpyBertEncoder` (max difference ~1e-7)."""

    def __init__(self, folder: str | Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        cfg, w, self.tokenizer = read_model(folder)
        self.hidden = int(cfg["hidden_size"])
        self._word = w["embeddings.word_embeddings.weight"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(MAX_THREADS, os.cpu_count() or 1))
        options.inter_op_num_threads = 1
        # Idle pool threads sleep instead of spinning: the event loop shares these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        model, weights = _graph(w, cfg)
        names = list(weights)
        # (kept: the session reads these arrays, which must outlive it)
        self._weights = [ort.OrtValue.ortvalue_from_numpy(weights[n]) for n in names]
        options.add_external_initializers(names, self._weights)
        self._session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.hidden

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Embeddings of ``n`` padded sequences ``ids`` [n, length] (``mask`` 1 on real tokens)."""
        (h,) = self._session.run(["h"], {"x": self._word[ids], "mask": mask})
        return mean_pooled(np.einsum("nlh,nl->nh", h, mask), mask)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Normalized float32 matrix ``(len(texts), dim)``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            for chunk, ids, mask in padded_batches(self.tokenizer, texts, batch_size):
                out[chunk] = self._forward(ids, mask.astype(np.float32))
        return out
