"""Credentials out of everything smart-agent writes: cassettes, ``threads export``, eval
results and trajectories, the CLI's error and event lines, ``doctor``.

* :func:`redact_text` - a text with its credentials replaced by ``***``: the password of every
  ``scheme://user:password@host`` URL in it (a lone ``scheme://token@host`` user, often a
  token, too), the values of query (and fragment) parameters that carry keys (``api_key``,
  ``key``, ``token``, ``access_token``, ``sig``, ...: :data:`SECRET_PARAMS`), header values
  written out (``Authorization: Bearer ...``, ``x-api-key: ...``, cookies), and the values of
  the environment's key variables (``OPENAI_API_KEY``, ``*_API_KEY``, ``*_TOKEN``,
  ``*_SECRET``, ``*_PASSWORD``; at least :data:`MIN_SECRET_LENGTH` characters) and of the
  passwords in its URL variables (``OPENAI_BASE_URL``, ``SMART_AGENT_DB``, proxies), wherever
  they appear;
* :func:`redact_url` - the same for one URL;
* :func:`redact_headers` - headers with the values of :data:`SECRET_HEADERS` replaced;
* :func:`redact_value` - a JSON-like value (dicts, lists, strings) copied with every string
  redacted and every field named like a credential (:func:`is_secret_name`: ``api_key``,
  ``password``, ``authorization``, ...) holding a string replaced. Walked without recursion,
  so any depth is fine.

Redaction replaces, it never removes: ``http://user:***@host/v1`` still says where a request
went. It is deterministic (the same input gives the same output), which the cassette matching
relies on (cassette/store.py redacts a live request before looking it up).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_HEADERS",
    "SECRET_PARAMS",
    "environment_secrets",
    "is_secret_name",
    "redact_headers",
    "redact_text",
    "redact_url",
    "redact_value",
]

MASK = "***"

#: Query / fragment parameters whose value is a credential (compared lower-case, ``-`` as ``_``).
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "refresh_token", "id_token", "auth", "auth_token",
    "authorization", "password", "passwd", "pwd", "secret", "client_secret", "sig", "signature", "code",
    "session", "sessionid", "session_token", "jwt", "x_amz_signature", "x_amz_credential", "x_amz_security_token",
    "x_goog_signature", "x_goog_credential", "x_api_key", "private_token", "subscription_key",
})  # fmt: skip

#: Headers whose value is a credential (lower-case).
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie", "set-cookie",
    "x-auth-token", "x-access-token", "ocp-apim-subscription-key", "private-token",
})  # fmt: skip

#: Field names (besides the headers') whose string value is a credential.
_SECRET_FIELDS = frozenset({
    "api_key", "apikey", "password", "passwd", "secret", "client_secret", "access_token", "refresh_token",
    "id_token", "auth_token", "session_token", "private_key",
})  # fmt: skip
_SECRET_SUFFIXES = ("_api_key", "_apikey", "_password", "_secret", "_access_token", "_refresh_token", "_auth_token")

#: Environment values shorter than this are not searched for (``OPENAI_API_KEY=x`` for a
#: local server is no secret, and masking every "x" would garble the text).
MIN_SECRET_LENGTH = 8

#: Environment variables whose value is a key: ``OPENAI_API_KEY``, ``HF_TOKEN``, ``PGPASSWORD``...
_SECRET_ENV = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASS|PASSWD|PAT)$|PASSWORD$", re.IGNORECASE)
#: Environment variables that may hold a URL with a password.
_URL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_PROXY", "SMART_AGENT_DB", "DATABASE_URL",
            "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")  # fmt: skip

# scheme://userinfo@ : the userinfo runs to the last "@" before the path, query, fragment or the
# end of the URL (a password may hold an unescaped "@"); it stops at quotes and backslashes, so a
# URL inside JSON text (``\"http://...\"``) is found as well.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^\s/?#'\"\\<>`]*)@")
_PARAM = re.compile(r"(?P<lead>[?&;#])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&;#\s'\"\\<>`]+)")
_HEADER = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key|\bx-auth-token|\bx-access-token"
    r"|\bocp-apim-subscription-key|\bprivate-token)(?P<sep>\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    r"(?P<scheme>(?:bearer|basic|token|digest)\s+)?(?P<value>[^\s\"'\\,;{}\[\]]+)",
    re.IGNORECASE,
)
_COOKIE = re.compile(r"(?P<name>\b(?:set-)?cookie)(?P<sep>\\?[\"']?\s*:\s*\\?[\"']?)(?P<value>[^\"'\\\r\n]+)", re.I)
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-]{6,}")


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def is_secret_name(name: str) -> bool:
    """Whether a field, header or parameter of this name holds a credential (``api_key``,
    ``Authorization``, ``x-api-key``, ``password``, ``OPENAI_API_KEY``...)."""
    norm = _norm(name)
    return (
        norm in _SECRET_FIELDS or norm.replace("_", "-") in SECRET_HEADERS or norm.endswith(_SECRET_SUFFIXES)
    )


def environment_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The credential values of the environment, longest first: the key variables' values and
    the passwords (and lone users) of its URL variables, at least :data:`MIN_SECRET_LENGTH` long."""
    env = os.environ if environ is None else environ
    found: set[str] = set()
    for name, value in env.items():
        if value and _SECRET_ENV.search(name) and not name.endswith(("_FILE", "_PATH")):
            found.add(value.strip())
    for name in _URL_ENV:
        value = env.get(name) or ""
        if "@" not in value:
            continue
        try:
            parts = urlsplit(value.strip())
        except ValueError:
            continue
        for secret in (parts.password, None if parts.password is not None else parts.username):
            if secret:
                found.update({secret, unquote(secret)})
    return tuple(sorted((s for s in found if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True))


def _userinfo(match: re.Match[str]) -> str:
    info = match.group("info")
    if not info:
        return match.group(0)
    user, colon, _password = info.partition(":")
    shown = f"{user}:{MASK}" if colon else MASK
    return f"{match.group('scheme')}{shown}@"


def _param(match: re.Match[str]) -> str:
    name = match.group("name")
    if _norm(name) in SECRET_PARAMS or is_secret_name(name) or _norm(name).endswith(("_token", "_sig")):
        return f"{match.group('lead')}{name}={MASK}"
    return match.group(0)


def _header(match: re.Match[str]) -> str:
    if match.group("value") == MASK:
        return match.group(0)
    return f"{match.group('name')}{match.group('sep')}{match.group('scheme') or ''}{MASK}"


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with its credentials replaced by ``***`` (module docstring). ``secrets``: the
    values to mask wherever they appear (default: :func:`environment_secrets`)."""
    if not text:
        return text
    for secret in environment_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _PARAM.sub(_param, text)
    lowered = text.lower()
    if any(word in lowered for word in ("auth", "key", "token", "cookie")):
        text = _HEADER.sub(_header, text)
        text = _COOKIE.sub(lambda m: f"{m.group('name')}{m.group('sep')}{MASK}", text)
    if "Bearer" in text:
        text = _BEARER.sub(f"Bearer {MASK}", text)
    return text


def redact_url(url: str, secrets: Iterable[str] | None = None) -> str:
    """``url`` with its password (or lone user) and its key-carrying parameters replaced by
    ``***``: ``http://user:***@host/v1?api_key=***``."""
    return redact_text(url, secrets)


def redact_headers(headers: Mapping[str, Any] | Iterable[tuple[str, Any]], secrets: Iterable[str] | None = None
                   ) -> dict[str, str]:  # fmt: skip
    """Headers as a dict, each value of :data:`SECRET_HEADERS` (and any credential-named
    header) replaced by ``***``, the others redacted as text."""
    known = environment_secrets() if secrets is None else tuple(secrets)
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {
        str(k): MASK if is_secret_name(str(k)) else redact_text(str(v), known) for k, v in items
    }


def redact_value(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of the JSON-like ``value`` with every string redacted (:func:`redact_text`) and
    every string held by a credential-named field (:func:`is_secret_name`) replaced by ``***``.
    Dicts and lists (tuples become lists) are copied; other values are kept as they are."""
    known = environment_secrets() if secrets is None else tuple(secrets)
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, index = stack.pop()
        item = container[index]
        if isinstance(item, str):
            container[index] = redact_text(item, known)
        elif isinstance(item, Mapping):
            copy: dict[Any, Any] = {}
            for key, sub in item.items():
                new_key = redact_text(key, known) if isinstance(key, str) else key
                if isinstance(key, str) and isinstance(sub, str) and sub and is_secret_name(key):
                    copy[new_key] = MASK
                else:
                    copy[new_key] = sub
                    stack.append((copy, new_key))
            container[index] = copy
        elif isinstance(item, (list, tuple)):
            items = list(item)
            container[index] = items
            stack.extend((items, i) for i in range(len(items)))
    return root[0]
