"""A NumPy forward pass of BERT sentence encoders (all-MiniLM-L6-v2 and kin).

Why: importing torch + sentence-transformers costs 6-8 s (more on a busy
machine), paid by every ``smart-agent run`` that touches memory. This module
reads the same files -- ``model.safetensors`` (no pickle), ``tokenizer.json``,
``config.json``, ``sentence_bert_config.json``, ``1_Pooling/config.json`` -- with
``safetensors.numpy`` and ``tokenizers`` and computes the same vectors in about
a quarter of a second of start-up. ``tests/e2e/test_memory_embedding_backends.py`` checks it
against sentence-transformers.

Supports BERT encoders with absolute positions, erf GELU, mean pooling and
normalization; anything else makes :func:`supported` return False and the caller
falls back to sentence-transformers.
"""

from __future__ import annotations

import functools
import json
import math
import mmap
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

# Abramowitz & Stegun 7.1.26 constants (|error| < 1.5e-7, below float32 noise).
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
# The same polynomial in |x| rather than |x| / sqrt(2), halved (see _gelu_).
_T_SCALE = np.float32(_P / math.sqrt(2.0))
_HALF_A = tuple(np.float32(c / 2) for c in _A)


def _gelu_(x: np.ndarray) -> np.ndarray:
    """erf GELU of ``x`` in place: ``0.5 x (1 + erf(x / sqrt 2))``.

    With erf(z) = sign(z) (1 - P(t) exp(-z^2)) (A&S 7.1.26) this is
    ``relu(x) - 0.5 |x| P(t) exp(-x^2 / 2)``: fewer passes than the textbook form
    and no cancellation in ``1 + erf`` for negative ``x``. Blocks of 64 K values
    keep the ~20 passes in cache (a [1536, 512] batch: 4.0 -> 2.4 ms).
    """
    rows = max(1, 65536 // max(1, x.shape[-1]))
    for i in range(0, len(x), rows):
        _gelu_block_(x[i : i + rows])
    return x


def _gelu_block_(x: np.ndarray) -> None:
    a = np.abs(x)
    t = a * _T_SCALE
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * _HALF_A[4]
    for c in (_HALF_A[3], _HALF_A[2], _HALF_A[1], _HALF_A[0]):
        p += c
        p *= t
    p *= a
    np.square(a, out=a)
    a *= np.float32(-0.5)
    np.exp(a, out=a)
    p *= a
    np.maximum(x, 0.0, out=x)
    x -= p


def _layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, mean_row: np.ndarray) -> np.ndarray:
    """Layer norm of each column of ``x`` ([hidden, tokens]) in place.

    Column sums as a ``[1, hidden] @ x`` product (``mean_row`` holds 1/hidden):
    several times faster than ``x.mean(0)`` for a few columns.
    """
    x -= mean_row @ x
    var = mean_row @ np.square(x)
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= w
    x += b
    return x


# OpenBLAS (0.3.x, x86-64) multiplies without packing when m * n * k <= 1e6, about
# 1.7x faster per weight row for a few tokens (a 1536x384 weight, 8 tokens: 326
# rows take 40 us, 325 rows 23 us). For up to _SPLIT_TOKENS tokens a weight is
# therefore applied as a stack of row blocks under that size -- one numpy call
# (one GIL release), one BLAS call per block: with 1 thread the 24 dense products
# of a 10-token query take ~5.5 instead of ~7 ms. Beyond ~20 tokens the split
# gains nothing; other BLAS libraries only pay a few more calls.
_SMALL_GEMM = 1_000_000
_SPLIT_TOKENS = 20


@functools.lru_cache(maxsize=256)
def _block_rows(out_dim: int, in_dim: int, tokens: int) -> int:
    """Rows per block for ``_dense`` (a divisor of ``out_dim``); ``out_dim`` = no split."""
    if tokens > _SPLIT_TOKENS or out_dim * in_dim * tokens <= _SMALL_GEMM:
        return out_dim
    rows = _SMALL_GEMM // (in_dim * tokens)
    while rows >= 16 and out_dim % rows:
        rows -= 1
    return rows if rows >= 16 else out_dim


def _dense(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x + b`` for a weight ``w`` [out, in] and column-major activations ``x`` [in, tokens]."""
    (out_dim, in_dim), tokens = w.shape, x.shape[1]
    rows = _block_rows(out_dim, in_dim, tokens)
    out = w @ x if rows == out_dim else (w.reshape(-1, rows, in_dim) @ x).reshape(out_dim, tokens)
    out += b
    return out


def _blas_limiter() -> Any:
    """A context manager running BLAS on one thread (``threadpoolctl``, if installed).

    These matrices are small: with two OpenBLAS threads a busy 2-core machine
    encodes 5-10x slower than with one (measured: 7 vs 77 sentences/s). Two
    threads for a lone query only (products unsplit, see ``_dense``) measured
    4.5 vs 6.3 ms idle but 10.3 vs 6.7 ms next to a busy process: kept at one.
    """
    try:
        from threadpoolctl import ThreadpoolController

        controller = ThreadpoolController()
        return lambda: controller.limit(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - optional
        import contextlib

        return contextlib.nullcontext


_HUGE_PAGE = 2 << 20  # x86-64 and arm64 transparent huge pages
_ALIGN = 64


def _array_source(nbytes: int) -> Callable[[tuple[int, ...]], np.ndarray]:
    """``take(shape)``: empty float32 arrays, each 64-byte aligned, carved out of one anonymous
    mapping of ``nbytes`` (rounded up to 2 MB) advised to use transparent huge pages (Linux
    ``MADV_HUGEPAGE``); elsewhere, or when the mapping fails, ``np.empty``. A query's forward
    pass reads all ~42 MB of dense weights once: on 4 KB pages that is ~10,000 pages whose
    address translations are no longer cached when the next query comes, on 2 MB pages ~21."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    try:
        if advice is None:
            raise OSError("no transparent huge pages here")
        arena = mmap.mmap(-1, -(-nbytes // _HUGE_PAGE) * _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        arena.madvise(advice)
    except (OSError, ValueError, AttributeError):
        return lambda shape: np.empty(shape, dtype=np.float32)
    offset = 0

    def take(shape: tuple[int, ...]) -> np.ndarray:
        nonlocal offset
        count = math.prod(shape)
        out = np.frombuffer(arena, dtype=np.float32, count=count, offset=offset).reshape(shape)
        offset += -(-count * 4 // _ALIGN) * _ALIGN  # (each view keeps the mapping alive)
        return out

    return take


def _stacked(parts: Sequence[np.ndarray], take: Callable[[tuple[int, ...]], np.ndarray]) -> np.ndarray:
    """``parts`` stacked by rows into one C-contiguous float32 array from ``take``: ``[rows, in]``
    for matrices, ``[rows, 1]`` (a column) for vectors."""
    rows = sum(len(p) for p in parts)
    vector = parts[0].ndim == 1
    out = take((rows, 1) if vector else (rows, parts[0].shape[1]))
    np.concatenate(parts, axis=0, out=out.reshape(rows) if vector else out)
    return out


def _layer_parts(p: str) -> list[tuple[str, ...]]:
    """The safetensors names of each :class:`_Layer` field of the layer named ``p``, in field
    order (Q, K and V fused: three names stacked by rows)."""
    qkv = [p + f"attention.self.{n}" for n in ("query", "key", "value")]
    fields = [tuple(n + ".weight" for n in qkv), tuple(n + ".bias" for n in qkv)]
    for n in ("attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
              "output.LayerNorm"):
        fields += [(p + n + ".weight",), (p + n + ".bias",)]
    return fields


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def supported(folder: str | Path) -> bool:
    """Whether ``folder`` holds a model this implementation computes exactly."""
    folder = Path(folder)
    cfg = read_json(folder / "config.json")
    pool = read_json(folder / "1_Pooling" / "config.json")
    modules = read_json(folder / "modules.json") if (folder / "modules.json").exists() else []
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


def read_model(folder: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray], Any]:
    """``(config, weights, tokenizer)`` of the model in ``folder``: ``config.json``; the float32
    weights of ``model.safetensors`` by their names without the ``bert.`` prefix; the tokenizer of
    ``tokenizer.json``, unpadded, truncating at the model's ``max_seq_length``."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    folder = Path(folder)
    cfg = read_json(folder / "config.json")
    st_cfg = read_json(folder / "sentence_bert_config.json")
    raw = load_file(str(folder / "model.safetensors"))
    prefix = "bert." if any(k.startswith("bert.") for k in raw) else ""
    weights = {k[len(prefix) :]: v.astype(np.float32, copy=False) for k, v in raw.items()}
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=int(st_cfg.get("max_seq_length") or cfg.get("max_position_embeddings", 512)))
    return cfg, weights, tokenizer


class _Layer(NamedTuple):
    """One encoder layer: dense weights [out, in] (Q, K, V fused), biases and norms as [n, 1] columns."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    norm1_w: np.ndarray
    norm1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    norm2_w: np.ndarray
    norm2_b: np.ndarray


class NumpyBertEncoder:
    """Mean-pooled, L2-normalized BERT sentence embeddings in NumPy (float32).

    Activations are column-major -- ``[hidden, tokens]`` -- and the dense weights
    stay ``[out, in]`` as safetensors stores them, so each layer is ``W @ x``.
    For the few tokens of a query OpenBLAS runs that much faster than
    ``x @ W.T`` (measured 0.51 -> 0.30 ms for a 1536x384 weight and 7 tokens).
    """

    def __init__(self, folder: str | Path) -> None:
        cfg, w, self.tokenizer = read_model(folder)
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))

        def col(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name].reshape(-1, 1))

        self._word = w["embeddings.word_embeddings.weight"]
        # Position + token type 0, added once here instead of per call.
        self._pos = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
        self._emb_norm = (col("embeddings.LayerNorm.weight"), col("embeddings.LayerNorm.bias"))
        self._mean_row = np.full((1, self.hidden), 1.0 / self.hidden, dtype=np.float32)
        parts = [[[w[n] for n in names] for names in _layer_parts(f"encoder.layer.{i}.")] for i in range(self.layers)]
        fields = [field for layer in parts for field in layer]
        take = _array_source(sum(a.nbytes for field in fields for a in field) + _ALIGN * len(fields))
        self._layers = [_Layer(*(_stacked(field, take) for field in layer)) for layer in parts]
        self._lock = threading.Lock()
        self._threads = _blas_limiter()

    @property
    def dim(self) -> int:
        return self.hidden

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Embeddings of ``n`` padded sequences ``ids`` [n, length] (``mask`` 1 on real tokens)."""
        n, length = ids.shape
        tokens = n * length
        hidden, heads = self.hidden, self.heads
        hd = hidden // heads
        eps, mean_row = self.eps, self._mean_row
        x = self._word[ids.reshape(-1)].reshape(n, length, hidden)
        x += self._pos[:length]
        # Column-major from here on: token j of sequence b is column b * length + j.
        x = np.ascontiguousarray(x.reshape(tokens, hidden).T)
        _layer_norm_(x, *self._emb_norm, eps, mean_row)
        # Additive attention mask over keys, [n, 1, 1, length]; none if nothing is padded.
        bias = None
        if not mask.all():
            bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(hd))
        for lay in self._layers:
            qkv = _dense(lay.qkv_w, lay.qkv_b, x)
            # Row h * hd + d of Q, K, V is dim d of head h: [heads, hd, n, length] views.
            q, k, v = (qkv[i * hidden : (i + 1) * hidden].reshape(heads, hd, n, length) for i in range(3))
            scores = q.transpose(2, 0, 3, 1) @ k.transpose(2, 0, 1, 3)  # [n, heads, length, length]
            scores *= scale
            if bias is not None:
                scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = v.transpose(2, 0, 1, 3) @ scores.transpose(0, 1, 3, 2)  # [n, heads, hd, length]
            # Back to [hidden, tokens]; a view when n == 1.
            ctx = ctx.transpose(1, 2, 0, 3).reshape(hidden, tokens)
            a = _dense(lay.out_w, lay.out_b, ctx)
            a += x
            x = _layer_norm_(a, lay.norm1_w, lay.norm1_b, eps, mean_row)
            o = _dense(lay.down_w, lay.down_b, _gelu_(_dense(lay.up_w, lay.up_b, x)))
            o += x
            x = _layer_norm_(o, lay.norm2_w, lay.norm2_b, eps, mean_row)
        # Mean over each sequence's real tokens: [n, hidden, length] @ [n, length, 1].
        m = mask.astype(np.float32)
        return mean_pooled((x.reshape(hidden, n, length).transpose(1, 0, 2) @ m[:, :, None])[:, :, 0], m)

    def _padded_length(self, length: int) -> int:
        """``length`` rounded up to a multiple of 4 (masked [PAD] tokens; results unchanged).

        OpenBLAS multiplies a weight by 4 or 8 columns per pass and handles the
        rest in extra passes: one query's forward pass (1 thread) takes ~5.5 ms
        for 7 tokens and ~4.8 ms for the same 7 padded to 8; 3.7 -> 3.1 ms for 3.
        """
        if length <= 2:  # 1 column is a matrix-vector product, faster still
            return length
        return min(-(-length // 4) * 4, max(length, len(self._pos)))

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Normalized float32 matrix ``(len(texts), dim)``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        with self._lock, self._threads():
            for chunk, ids, mask in padded_batches(self.tokenizer, texts, batch_size, self._padded_length):
                out[chunk] = self._forward(ids, mask)
        return out


def mean_pooled(sums: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Sentence vectors from each sequence's sum of token vectors ``sums`` [n, hidden]: divided by
    its number of real tokens (``mask`` [n, length]), then L2-normalized, float32."""
    pooled = sums / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def padded_batches(
    tokenizer: Any, texts: list[str], batch_size: int, padded_length: Callable[[int], int] = int
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """``(rows, ids, mask)`` per batch of at most ``batch_size`` of ``texts``: ``rows`` their
    indexes in ``texts``, ``ids`` [n, length] token ids padded with 0 up to
    ``padded_length(longest)``, ``mask`` [n, length] 1 on real tokens. Similar lengths are
    batched together: less padding work (the vectors do not depend on the order)."""
    encs = tokenizer.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    for start in range(0, len(order), max(1, batch_size)):
        chunk = order[start : start + max(1, batch_size)]
        length = padded_length(max(len(encs[i].ids) for i in chunk))
        ids = np.zeros((len(chunk), length), dtype=np.int64)
        mask = np.zeros((len(chunk), length), dtype=np.int64)
        for row, i in enumerate(chunk):
            e = encs[i].ids
            ids[row, : len(e)] = e
            mask[row, : len(e)] = 1
        yield chunk, ids, mask
