"""Chat models: loading and calling them, their messages, tokens, prices and usage."""
