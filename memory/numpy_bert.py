"""A NumPy forward pass of BERT sentence encoders (all-MiniLM-L6-v2 and kin).

Why: importing torch + sentence-transformers costs 6-8 s (more on a busy
machine), paid by every ``smart-agent run`` that touches memory. This module
reads the same files -- ``model.safetensors`` (no pickle), ``tokenizer.json``,
``config.json``, ``sentence_bert_config.json``, ``1_Pooling/config.json`` -- with
``safetensors.numpy`` and ``tokenizers`` and computes the same vectors in about
a quarter of a second of start-up. ``tests/unit/test_memory_store.py`` checks it
against sentence-transformers.

Supports BERT encoders with absolute positions, erf GELU, mean pooling and
normalization; anything else makes :func:`supported` return False and the caller
falls back to sentence-transformers.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Abramowitz & Stegun 7.1.26 constants (|error| < 1.5e-7, below float32 noise).
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    t = a * np.float32(_P)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(_A[4])
    for c in (_A[3], _A[2], _A[1], _A[0]):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    poly *= np.sign(x)
    return poly


def _gelu(x: np.ndarray) -> np.ndarray:
    e = _erf(x * np.float32(1.0 / math.sqrt(2.0)))
    e += 1.0
    e *= x
    e *= np.float32(0.5)
    return e


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _blas_limiter() -> Any:
    """A context manager running BLAS on one thread (``threadpoolctl``, if installed).

    These matrices are small: with two OpenBLAS threads a busy 2-core machine
    encodes 5-10x slower than with one (measured: 7 vs 77 sentences/s).
    """
    try:
        from threadpoolctl import ThreadpoolController

        controller = ThreadpoolController()
        return lambda: controller.limit(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - optional
        import contextlib

        return contextlib.nullcontext


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def supported(folder: str | Path) -> bool:
    """Whether ``folder`` holds a model this implementation computes exactly."""
    folder = Path(folder)
    cfg = _read_json(folder / "config.json")
    pool = _read_json(folder / "1_Pooling" / "config.json")
    modules = _read_json(folder / "modules.json") if (folder / "modules.json").exists() else []
    module_types = [m.get("type", "") for m in modules] if isinstance(modules, list) else []
    return (
        (folder / "model.safetensors").is_file()
        and (folder / "tokenizer.json").is_file()
        and cfg.get("model_type") == "bert"
        and cfg.get("hidden_act") == "gelu"
        and cfg.get("position_embedding_type", "absolute") == "absolute"
        and bool(pool.get("pooling_mode_mean_tokens"))
        and not any(
            pool.get(k)
            for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
        )
        and all(t.rsplit(".", 1)[-1] in {"Transformer", "Pooling", "Normalize"} for t in module_types)
    )


class NumpyBertEncoder:
    """Mean-pooled, L2-normalized BERT sentence embeddings in NumPy (float32)."""

    def __init__(self, folder: str | Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        cfg = _read_json(folder / "config.json")
        st_cfg = _read_json(folder / "sentence_bert_config.json")
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.max_len = int(st_cfg.get("max_seq_length") or cfg.get("max_position_embeddings", 512))
        w = load_file(str(folder / "model.safetensors"))
        prefix = "bert." if any(k.startswith("bert.") for k in w) else ""
        self._w = {k[len(prefix):]: v for k, v in w.items()}
        # Pre-transpose dense weights once (safetensors keeps them as [out, in]).
        for k in list(self._w):
            if k.endswith(".weight") and self._w[k].ndim == 2 and "embeddings" not in k:
                self._w[k] = np.ascontiguousarray(self._w[k].T)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_len)
        self._lock = threading.Lock()
        self._threads = _blas_limiter()

    @property
    def dim(self) -> int:
        return self.hidden

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        n, length = ids.shape
        hd = self.hidden // self.heads
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        ).reshape(n * length, self.hidden)  # 2-D: one GEMM per dense layer
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(hd))

        def heads(h: np.ndarray) -> np.ndarray:
            return h.reshape(n, length, self.heads, hd).transpose(0, 2, 1, 3)

        def dense_of(prefix: str) -> Callable[[np.ndarray, str], np.ndarray]:
            def dense(h: np.ndarray, name: str) -> np.ndarray:
                out = h @ w[prefix + name + ".weight"]
                out += w[prefix + name + ".bias"]
                return out

            return dense

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            dense = dense_of(p)

            q = heads(dense(x, "attention.self.query"))
            k = heads(dense(x, "attention.self.key"))
            v = heads(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, self.hidden)
            a = dense(ctx, "attention.output.dense")
            a += x
            x = _layer_norm(
                a, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps
            )
            h = _gelu(dense(x, "intermediate.dense"))
            o = dense(h, "output.dense")
            o += x
            x = _layer_norm(o, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        x = x.reshape(n, length, self.hidden)
        m = mask[:, :, None].astype(np.float32)
        pooled = (x * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Normalized float32 matrix ``(len(texts), dim)``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        encs = self.tokenizer.encode_batch(texts)
        # Similar lengths together: less padding work (results are order-independent).
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        with self._lock, self._threads():
            for start in range(0, len(order), max(1, batch_size)):
                chunk = order[start : start + batch_size]
                length = max(len(encs[i].ids) for i in chunk)
                ids = np.zeros((len(chunk), length), dtype=np.int64)
                mask = np.zeros((len(chunk), length), dtype=np.int64)
                for row, i in enumerate(chunk):
                    e = encs[i].ids
                    ids[row, : len(e)] = e
                    mask[row, : len(e)] = 1
                out[chunk] = self._forward(ids, mask)
        return out
