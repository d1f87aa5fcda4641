"""URL rules in one place: how users may write Patroni and HAProxy URLs, and how any URL is shown.

Pure functions (no I/O). Every URL that can be printed, logged or stored goes through
``redact``; every URL a user or a server gives is checked by one of the ``*_url`` functions,
which raise ValueError with a message that says how to write it.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

HTTP_SCHEMES = ("http", "https")
# user:password@ (or user@) between "scheme://" and the host, anywhere in a text.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s?#]*)@")


def redact(text: str) -> str:
    """``text`` with the user:password part of every URL in it replaced by ``***``."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text)


def _split_http(value: str, example: str) -> SplitResult:
    shown = redact(value)
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        raise ValueError(f"{shown!r} is not a URL; write it like {example}") from None
    if parts.scheme.lower() not in HTTP_SCHEMES:
        got = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise ValueError(f"{shown!r} has {got}; only http and https work, e.g. {example}")
    if not parts.hostname:
        raise ValueError(f"{shown!r} has no host; write it like {example}")
    try:
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise ValueError(f"{shown!r} has a bad port; write it like {example}") from None
    if parts.fragment:
        raise ValueError(f"{shown!r} has a #fragment; remove it ({example})")
    return parts


def patroni_root(value: str) -> str:
    """A Patroni REST root (``scheme://host:port``) from what a user typed.

    ``/`` and ``/patroni`` are accepted and dropped; any other path or a query is refused,
    since Patroni serves its API at the root.
    """
    example = "http://10.0.0.5:8008"
    parts = _split_http(value, example)
    path = parts.path.rstrip("/")
    if path not in ("", "/patroni"):
        raise ValueError(
            f"{redact(value)!r}: Patroni serves its API at the root, not at {parts.path!r}; "
            f"give only scheme://host:port, e.g. {example}"
        )
    if parts.query:
        raise ValueError(
            f"{redact(value)!r} has a query string; give only scheme://host:port, e.g. {example}"
        )
    return urlunsplit((parts.scheme.lower(), parts.netloc, "", "", ""))


def haproxy_stats_url(value: str) -> str:
    """An HAProxy stats page URL; no path means the page at ``/`` (``;csv`` is added later)."""
    example = "http://10.0.0.10:7000/stats"
    parts = _split_http(value, example)
    path = parts.path or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, parts.query, ""))


def csv_url(url: str) -> str:
    """The stats page URL with ``;csv`` added to its path when missing (``/`` when there is none)."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if not path.endswith(";csv"):
        path = f"{path};csv"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def member_api_url(value: str) -> str:
    """A member's ``api_url`` as Patroni's /cluster must give it: ``scheme://host:port/patroni``.

    Anything else (another path, a query, user info, no port) is refused: a server's answer
    chooses where the console sends requests, so its shape is checked exactly.
    """
    example = "http://10.0.0.5:8008/patroni"
    parts = _split_http(value, example)
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"api_url {redact(value)!r} carries credentials; expected {example}")
    if parts.port is None:
        raise ValueError(f"api_url {value!r} has no port; expected {example}")
    if parts.path != "/patroni" or parts.query:
        raise ValueError(f"api_url {value!r} is not scheme://host:port/patroni")
    return urlunsplit((parts.scheme.lower(), parts.netloc, "/patroni", "", ""))


def root_of(api_url: str) -> str:
    """The REST root (``scheme://host:port``) of a member's api_url."""
    parts = urlsplit(api_url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def host_of(url: str) -> str | None:
    """The host part of a URL (without brackets for IPv6), or None."""
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None
