"""Policies: the agent loop's concerns, each in one place, and the user's LangChain middleware."""
