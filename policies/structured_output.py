"""Structured output: the final answer must be JSON valid against a schema; an invalid answer
goes back to the model with the validation errors (``structuredOutput`` node,
``replies/structured.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config.fields import Settings, setting
from ..config.files import json_file


@dataclass(kw_only=True)
class StructuredOutputSettings(Settings):
    """Structured output"""

    output_schema: dict[str, Any] | None = setting(
        None,
        help="JSON Schema of the final answer. When set, the run ends with a JSON object validated against it "
        "(state 'structured_response'); invalid answers go back to the model with the validation errors.",
        parse=json_file("--output-schema"),
        metavar="FILE",
        env=False,
    )
    max_output_retries: int = setting(
        2,
        help="How many times an answer that is not valid JSON for output_schema is sent back to the model "
        "before the run fails with StructuredOutputError.",
        bounds=(0, 100),
        client="lower",
    )
