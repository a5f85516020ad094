"""Model fallback: other models get the same request when a model call fails with a provider
error after its retries (``models/chat.py`` ``invoke_model`` tries them, with a
``model_fallback`` event each)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.checks import model_spec_valid
from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class FallbackSettings(Settings):
    """Model fallback"""

    fallback_models: list[str] = setting(
        [],
        help="Models ('provider:model') that get the same request, in order, when a model call fails with a "
        "provider error (HTTP 429/5xx, unreachable, timed out) after its retries; never for configuration "
        "errors (credentials, unknown model).",
        rule=(lambda v: all(model_spec_valid(m) for m in v), "a list of 'provider:model' strings"),
        flag="--fallback-model",
        metavar="SPEC",
        repeat=True,
    )
