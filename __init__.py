"""smart-agent: autonomous agents on LangGraph."""

__version__ = "0.1.0"
