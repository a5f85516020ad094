"""docs/configuration.md is what the settings' declarations say (config/reference.py)."""

from __future__ import annotations

import pytest
from conftest import REPO

from smart_agent.config.context import Context, context_field_names
from smart_agent.config.reference import reference

pytestmark = pytest.mark.unit


def test_the_configuration_reference_is_not_stale():
    on_disk = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert on_disk == reference(), (
        "docs/configuration.md is stale: run `python -m smart_agent.config.reference > docs/configuration.md`"
    )


def test_every_setting_is_in_the_reference():
    text = reference()
    assert all(f"| `{name}` |" in text for name in context_field_names(Context))
