"""Model loading: any ``provider:model`` string through ``init_chat_model``.

This is the only place that knows about providers. ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` are honoured by the OpenAI client, so any OpenAI-compatible
server works with ``openai:<model>``.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from langchain_core.language_models import BaseChatModel

from ..config import settings
from ..config.context import context_field
from ..replies import guard_openai_tool_args, sanitize_reply
from ..runs.events import emit
from .prompt_cache import Prepared, is_lost_response, prepare_request, remember_reply
from .usage import budget_hooks, checked_usage, record_end, record_start, retry_refused_error

#: How to set up a model: printed by `smart-agent doctor` (cli/doctor.py) after a model problem.
SETUP_HELP = (
    "Configure a model with --model PROVIDER:MODEL (or SMART_AGENT_MODEL), for example "
    "'openai:gpt-4o-mini' with OPENAI_API_KEY set, 'anthropic:claude-sonnet-4-5' with "
    "ANTHROPIC_API_KEY, or 'ollama:llama3.1' with a local Ollama. For any OpenAI-compatible "
    "server (vLLM, llama.cpp, LM Studio...) set OPENAI_BASE_URL=http://host:port/v1 and "
    "OPENAI_API_KEY (any value if the server ignores it). `smart-agent demo` runs fully "
    "offline against a bundled scripted model."
)
#: The end of every model configuration error: short, the set-up text is behind `smart-agent doctor`.
HOW_TO_CONFIGURE = (
    "Check --model (or SMART_AGENT_MODEL) and the provider's key: `smart-agent doctor` says what is wrong."
)


class ModelConfigError(RuntimeError):
    """The model cannot be constructed or reached; the message says how to fix it."""


class ModelReplyError(RuntimeError):
    """The model's reply is unusable (garbage body, or empty after a retry); one line."""


class ModelTimeoutError(RuntimeError):
    """The model service did not answer within ``model_timeout_s`` (after its retries); one line."""


class ModelBudgetError(RuntimeError):
    """A model request failed and the run's budget leaves no call for its retry; one line."""


#: Providers whose chat model class accepts ``timeout=`` and ``max_retries=``.
_TIMEOUT_PROVIDERS = {
    "openai", "azure_openai", "anthropic", "groq", "mistralai", "deepseek", "xai", "fireworks",
    "together", "google_genai", "perplexity",
}  # fmt: skip


def model_options(ctx: Any) -> dict[str, Any]:
    """The run's request options for :func:`load_chat_model`: ``timeout`` (seconds) and
    ``max_retries`` from the context fields ``model_timeout_s`` / ``model_max_retries``, and
    ``responses_api=True`` when the context's ``responses_api`` is on (OpenAI models only)."""
    options: dict[str, Any] = {
        "timeout": float(context_field(ctx, "model_timeout_s", 120.0)),
        "max_retries": int(context_field(ctx, "model_max_retries", 2)),
    }
    if context_field(ctx, "responses_api", False):
        options["responses_api"] = True
    return options


@dataclass(frozen=True)
class Fallback:
    """A model tried with the same request when the previous one fails with a provider
    error: its spec, the run's request limits, and how the caller turns the bare chat model
    into what it invokes (``bind_tools``, ``with_structured_output``, ``with_config``...).
    Built only when needed."""

    spec: str
    options: dict[str, Any] = field(default_factory=dict)
    rebind: Callable[[Any], Any] | None = None

    def bound(self, fn: Callable[[Any], Any]) -> Fallback:
        """This fallback with ``fn`` applied after its current rebinding."""
        before = self.rebind
        return replace(self, rebind=fn if before is None else (lambda m: fn(before(m))))

    def build(self, loop: asyncio.AbstractEventLoop | None = None) -> Any:
        """The fallback's model, rebound; ``loop``: the event loop that will call it (when a
        worker thread builds it, as :func:`invoke_model` does)."""
        model = _load(self.spec, loop, **self.options)
        return model if self.rebind is None else self.rebind(model)


def model_fallbacks(ctx: Any) -> list[Fallback]:
    """The run's fallback models (context field ``fallback_models``), in order, each with
    the run's request limits (:func:`model_options`)."""
    specs = context_field(ctx, "fallback_models", []) or []
    if not specs:  # (every turn asks: most runs have none)
        return []
    options = model_options(ctx)
    return [Fallback(spec, options) for spec in specs]


def rebind_all(fallbacks: Sequence[Fallback], fn: Callable[[Any], Any]) -> list[Fallback]:
    """``fallbacks`` with ``fn`` applied to each one's model, as the caller did to its own."""
    return [f.bound(fn) for f in fallbacks]


# Failures of the service, not of the request or its configuration: another model may answer.
_PROVIDER_ERRORS = {
    "RateLimitError", "InternalServerError", "APIConnectionError", "APITimeoutError", "ModelTimeoutError",
}  # fmt: skip


def is_provider_error(exc: BaseException) -> bool:
    """True for a rate limit, a server error (HTTP 429 / 5xx), an unreachable or timed-out
    service; False for credentials, an unknown model, a bad request or a configuration error."""
    if isinstance(exc, ModelConfigError):
        return False
    if {cls.__name__ for cls in type(exc).__mro__} & _PROVIDER_ERRORS:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _limit_kwargs(provider: str | None, timeout: float | None, max_retries: int | None) -> dict[str, Any]:
    """``timeout`` / ``max_retries`` in the form the provider's class takes (dropped where unknown)."""
    if provider in _TIMEOUT_PROVIDERS:
        return {k: v for k, v in (("timeout", timeout), ("max_retries", max_retries)) if v is not None}
    if provider == "ollama" and timeout is not None:
        return {"client_kwargs": {"timeout": timeout}}
    return {}


_cache: dict[tuple, BaseChatModel] = {}
# The models built for async calls, per event loop. An HTTP client's pooled connections belong to
# the loop that opened them, and LangChain's OpenAI models share one async client per base URL
# process-wide: a script's second ``asyncio.run(graph.ainvoke(...))`` (or another thread's loop)
# failed with "Event loop is closed". Each loop gets models of its own, an OpenAI one with its own
# async client, and a loop's models go with it.
_loop_cache: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, BaseChatModel]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _provider_kwargs(provider: str, responses_api: bool = False) -> dict[str, Any]:
    if provider == "openai":
        # Without stream_usage, streamed responses from custom base URLs carry no usage.
        kwargs: dict[str, Any] = {"stream_usage": True}
        if responses_api:  # (prompt_cache.py chains its requests with previous_response_id)
            kwargs["use_responses_api"] = True
        if sys.version_info < (3, 12):
            # langchain-openai wraps each streamed chunk's read in asyncio.wait_for (stream_chunk_timeout);
            # on Python 3.11 that lost the cancellation of Ctrl-C in a streamed answer (the run went on,
            # a second Ctrl-C was needed). A stalled request is still bounded by --model-timeout.
            kwargs["stream_chunk_timeout"] = None
        base = settings.openai_base_url()
        if base:
            kwargs["base_url"] = base
        return kwargs
    return {}


#: Providers whose requests a --record / --replay session (cassette/) carries: the OpenAI SDK's.
CASSETTE_PROVIDERS = frozenset({"openai"})


def _cassette_kwargs(provider: str | None, spec: str) -> dict[str, Any]:
    """The HTTP clients of the active record or replay session (cassette/transport.py), if any;
    a ModelConfigError for a provider it does not cover (its requests would bypass it)."""
    from ..cassette import active_session

    session = active_session()
    if session is None:
        return {}
    if provider not in CASSETTE_PROVIDERS:
        raise ModelConfigError(
            f"--record/--replay cover only {', '.join(sorted(CASSETTE_PROVIDERS))}: models (any OpenAI-compatible "
            f"server), not {spec!r}."
        )
    kwargs = session.client_kwargs()
    if session.mode == "replay" and not settings.openai_api_key():
        kwargs["api_key"] = "replay"  # nothing is sent anywhere; the SDK only wants a key
    return kwargs


def split_spec(spec: str) -> tuple[str | None, str]:
    if ":" in spec:
        provider, model = spec.split(":", 1)
        return provider.strip().lower() or None, model.strip()
    return None, spec.strip()


def load_chat_model(
    spec: str | BaseChatModel, *, timeout: float | None = None, max_retries: int | None = None, **overrides: Any
) -> BaseChatModel:
    """Build (and cache) a chat model from ``provider:model``.

    ``timeout`` (seconds per request) and ``max_retries`` bound every request; pass
    ``**model_options(ctx)`` for the run's settings. A ``BaseChatModel`` instance is
    returned unchanged. Errors at construction time
    (missing key, unknown provider, missing integration package) become a
    ``ModelConfigError`` whose message says how to configure a model. Called on an event
    loop, the model is that loop's (see ``_loop_cache``).
    """
    return _load(spec, _running_loop(), timeout=timeout, max_retries=max_retries, **overrides)


def _load(
    spec: str | BaseChatModel,
    loop: asyncio.AbstractEventLoop | None,
    *,
    timeout: float | None = None,
    max_retries: int | None = None,
    **overrides: Any,
) -> BaseChatModel:
    """:func:`load_chat_model` for calls on ``loop`` (None: synchronous calls only)."""
    if isinstance(spec, BaseChatModel):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ModelConfigError(f"No model given. {HOW_TO_CONFIGURE}")
    provider, name = split_spec(spec)
    if not name:
        raise ModelConfigError(f"Model spec {spec!r} names no model. {HOW_TO_CONFIGURE}")
    key = _model_key(spec, timeout, max_retries, overrides)
    with _lock:
        cache = _cache if loop is None else _loop_cache.setdefault(loop, {})
        if key in cache:
            return cache[key]
    responses_api = bool(overrides.pop("responses_api", False))
    kwargs = {
        **(_provider_kwargs(provider, responses_api) if provider else {}),
        **_cassette_kwargs(provider, spec),
        **_limit_kwargs(provider, timeout, max_retries),
        **overrides,
    }
    if loop is not None and provider == "openai" and not _own_async_client(kwargs):
        import openai

        # (the per-request timeout still applies; the hooks count the client's retries as model calls)
        kwargs["http_async_client"] = openai.DefaultAsyncHttpxClient(event_hooks=budget_hooks())
    from langchain.chat_models import init_chat_model

    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError as exc:
        raise ModelConfigError(
            f"The integration package for {spec!r} is not installed ({exc}). Install it "
            f"(e.g. `pip install langchain-{provider}`). {HOW_TO_CONFIGURE}"
        ) from None
    except Exception as exc:  # missing API key, unknown provider...
        raise ModelConfigError(f"Cannot use model {spec!r}: {_first_line(exc)}. {HOW_TO_CONFIGURE}") from None
    with _lock:
        return cache.setdefault(key, model)


def _own_async_client(kwargs: dict[str, Any]) -> bool:
    """Whether an OpenAI model built with ``kwargs`` gets an async HTTP client of its own anyway:
    one given (a record/replay session's), or one LangChain builds for a proxy (``openai_proxy``,
    ``$OPENAI_PROXY``: it refuses a client beside a proxy)."""
    return "http_async_client" in kwargs or bool(kwargs.get("openai_proxy") or settings.openai_proxy())


def _model_key(spec: str, timeout: float | None, max_retries: int | None, overrides: dict[str, Any]) -> tuple:
    """What a model built for ``spec`` with these options depends on: they, the OpenAI variables
    and the record/replay session (whose clients it is given). Reads no file: the event loop asks it."""
    from ..cassette import active_session

    options = {"timeout": timeout, "max_retries": max_retries, **overrides}
    return (
        spec, tuple(sorted((k, repr(v)) for k, v in options.items())), settings.openai_base_url(),
        settings.openai_api_key(), settings.openai_proxy(), active_session(),
    )


async def aload_chat_model(
    spec: str | BaseChatModel, *, timeout: float | None = None, max_retries: int | None = None, **overrides: Any
) -> BaseChatModel:
    """:func:`load_chat_model` for this loop: found on the loop when it was built before (a run's
    turns ask again and again: no thread hop, ~0.13 ms a turn), else built off the loop (building
    a client reads certificates from disk)."""
    if isinstance(spec, BaseChatModel):
        return spec
    loop = asyncio.get_running_loop()
    if isinstance(spec, str):
        key = _model_key(spec, timeout, max_retries, overrides)
        with _lock:
            model = _loop_cache.get(loop, {}).get(key)
        if model is not None:
            return model
    return await asyncio.to_thread(_load, spec, loop, timeout=timeout, max_retries=max_retries, **overrides)


def _first_line(exc: BaseException) -> str:
    """The first line of an error's message, its credentials redacted (a client error may quote
    the URL it was sent to, with the base URL's password)."""
    from ..runs.redact import redact_text

    text = str(exc).strip().splitlines()
    return redact_text(text[0].rstrip(".")) if text else type(exc).__name__


def explain_model_error(exc: BaseException, spec: str | None = None) -> ModelConfigError | ModelTimeoutError | None:
    """Map a provider/transport exception raised by a model call to a ModelConfigError.

    Returns None for errors that are not about configuration or reachability.
    """
    from ..runs.redact import redact_url

    if isinstance(exc, ModelConfigError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    module = type(exc).__module__ or ""
    where = f" for model {spec!r}" if spec else ""
    base = settings.openai_base_url()
    target = f" at {redact_url(base)}" if base and (spec or "").startswith("openai:") else ""
    if names & {"AuthenticationError", "PermissionDeniedError", "ModelAuthenticationError"}:
        return ModelConfigError(
            f"The model service rejected the credentials{where}{target} ({_first_line(exc)}). {HOW_TO_CONFIGURE}"
        )
    if names & {"APITimeoutError", "TimeoutException", "ReadTimeout"}:  # accepted, then no answer in time
        return ModelTimeoutError(
            f"The model service{target} did not answer in time{where} ({_first_line(exc)}); see model_timeout_s / "
            "--model-timeout."
        )
    if names & {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "ConnectionError"} or (
        "connect" in type(exc).__name__.lower() and any(m in module for m in ("httpx", "openai", "anthropic", "ollama"))
    ):
        return ModelConfigError(
            f"Could not reach the model service{where}{target} ({_first_line(exc)}). {HOW_TO_CONFIGURE}"
        )
    if "NotFoundError" in names:
        return ModelConfigError(
            f"The model service does not know this model{where}{target} ({_first_line(exc)}). {HOW_TO_CONFIGURE}"
        )
    return None


async def invoke_model(
    runnable: Any, messages: list, *, spec: str | None = None, fallbacks: Sequence[Fallback] = ()
) -> Any:
    """Call a chat model (or a runnable built on one); configuration and reachability
    failures become ModelConfigError, an unreadable reply (no choices, HTML, invalid
    UTF-8...) a one-line ModelReplyError; lone surrogates in the reply are replaced.

    A provider error (:func:`is_provider_error`, after the client's own retries) sends the
    same request to the next of ``fallbacks`` (:func:`model_fallbacks`, rebound like
    ``runnable``), with a ``model_fallback`` event; configuration errors never do.

    Each request is counted on the run's meter (usage.py), when one is current: the call, each
    retry the OpenAI client makes on its own (:func:`usage.count_model_retry`) and each fallback's call;
    a reply whose provider reported invalid usage (usage.checked_usage) carries and counts the
    estimate. No fallback is tried once the run's budget has no call left."""
    guard_openai_tool_args()  # non-object tool arguments become invalid tool calls
    pending = list(fallbacks)
    while True:
        try:
            meter = record_start()  # every request counts against the run's budget (usage.py)
            request = prepare_request(runnable, messages)  # cache hints, chaining (prompt_cache.py)
            result = checked_usage(await _send(runnable, request), messages)  # (invalid usage: the estimate)
            remember_reply(request, result)
            record_end(meter, messages, result, spec)
            break
        except Exception as exc:
            if isinstance(exc, retry_refused_error()):
                where = f" ({spec})" if spec else ""
                raise ModelBudgetError(f"Model call{where}: {exc}.") from None
            if not pending or not is_provider_error(exc) or (meter is not None and meter.spent()):
                _raise_model_error(exc, spec)
            fallback = pending.pop(0)
            emit("model_fallback", **{"from": spec or "model", "to": fallback.spec, "error": _first_line(exc)})
            spec = fallback.spec
            runnable = await asyncio.to_thread(fallback.build, asyncio.get_running_loop())
    if isinstance(result, dict) and "raw" in result:  # with_structured_output(include_raw=True)
        return {**result, "raw": sanitize_reply(result["raw"])}
    return sanitize_reply(result)


async def _send(runnable: Any, request: Prepared) -> Any:
    """Send a prepared request; a chained one whose ``previous_response_id`` the provider no longer
    has (HTTP 404) is sent again whole, without it (one model call of the run: the first attempt
    used no tokens)."""
    if not request.chained:
        return await runnable.ainvoke(request.messages, **request.kwargs)
    try:
        return await runnable.ainvoke(request.messages, **request.kwargs)
    except Exception as exc:
        if not is_lost_response(exc):
            raise
    request.chained, request.messages, request.kwargs = False, request.whole, request.unchained
    return await runnable.ainvoke(request.messages, **request.kwargs)


def _raise_model_error(exc: Exception, spec: str | None) -> NoReturn:
    """Raise what a failed model call means: a configuration, timeout or reply error, else ``exc``."""
    from ..cassette import miss_from_error
    from ..replies import reply_problem

    miss = miss_from_error(exc)  # --replay: the cassette holds no answer to this request
    if miss is not None:
        raise miss from None
    explained = explain_model_error(exc, spec)
    if explained is not None:
        raise explained from None
    problem = reply_problem(exc)
    if problem is not None:
        where = f" from model {spec!r}" if spec else ""
        raise ModelReplyError(f"Unusable reply{where}: {problem}.") from None
    raise exc
