"""HAProxy's pools and servers: which backend is a pool, which server takes traffic."""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pgtop_ha.models.servers import member_of
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer


@dataclass(frozen=True)
class Pools:
    """How HAProxy backends are told apart: patterns of writer and reader backend names (``matches``)."""

    writer: Sequence[str]
    reader: Sequence[str]

    def kind(self, proxy: str) -> str | None:
        """'writer', 'reader' or None for a backend name."""
        # Asked for every server by several panes and checks each snapshot (~50 times a
        # second): the same few names, so the answer is kept.
        return _kind(tuple(self.writer), tuple(self.reader), proxy)


# A pattern this short must be a whole word of the backend name: "ro" is `pg_ro` or `postgres-ro`,
# not `production`, `europe` or a cluster named `tron` (Patroni's example names its one pool after
# the scope), which would make a writer pool a reader pool.
_WORD_PATTERN_MAX = 2
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def matches(pattern: str, proxy: str) -> bool:
    """Whether backend ``proxy`` matches ``pattern``: anywhere, or as a whole word when it is short."""
    low, pat = proxy.lower(), pattern.lower()
    if len(pat) > _WORD_PATTERN_MAX:
        return pat in low
    # A numbered pool (`pg_ro2`) is still the word.
    return any(word == pat or word.rstrip(string.digits) == pat for word in _WORD_SPLIT.split(low))


@functools.lru_cache(maxsize=256)
def _kind(writer: tuple[str, ...], reader: tuple[str, ...], proxy: str) -> str | None:
    if any(matches(s, proxy) for s in writer):
        return "writer"
    if any(matches(s, proxy) for s in reader):
        return "reader"
    return None


# settings.HAProxySettings' defaults (models must not import settings).
DEFAULT_POOLS = Pools(("writer", "primary", "master", "rw"), ("reader", "replica", "standby", "ro"))


def state_word(status: str | None) -> str:
    """HAProxy's status without its transition counter: 'UP 1/3' is UP, 'DOWN 1/2' is DOWN."""
    word = (status or "?").split(" ")[0].upper()
    return word or "?"


def is_up(server: HAProxyServer) -> bool:
    """True when HAProxy would send traffic to the server (UP, or UP going down: 'UP 1/2')."""
    return state_word(server.status) == "UP"


# HAProxy's last check results in which the server's health endpoint (Patroni's REST API) gave
# no answer a healthy member gives: refused, timed out, garbled. L7STS is an answer (503: not
# the role this pool wants), the normal state of every replica in the writer pool.
_CHECK_UNANSWERED = frozenset({"SOCKERR", "L4TOUT", "L4CON", "L6TOUT", "L6RSP", "L7TOUT", "L7RSP"})


def check_unanswered(server: HAProxyServer) -> bool:
    """Is the server DOWN because HAProxy's check got no answer (L4CON, L7TOUT…), not a 503?"""
    # A check under way is shown as "* L4CON": its last result, prefixed.
    result = (server.check_status or "").removeprefix("* ").strip().upper()
    return state_word(server.status) == "DOWN" and result in _CHECK_UNANSWERED


Routing = frozenset[tuple[str, str, str | None]]
"""Each (backend, server, status) HAProxy lists: see routing()."""


def routing(servers: Iterable[HAProxyServer]) -> Routing:
    """Each server's status in each backend: what a routing change changes (counters left out)."""
    return frozenset((s.proxy, s.server, s.status) for s in servers)


def routes(snapshot: ClusterSnapshot, pools: Pools, kind: str) -> dict[str, HAProxyServer]:
    """The servers of the ``kind`` pool by the member each one is (models/servers.py)."""
    out: dict[str, HAProxyServer] = {}
    for srv in snapshot.haproxy.servers:
        # Several backends of one pool may list one member: keep the UP one.
        name = member_of(srv)
        if pools.kind(srv.proxy) == kind and (name not in out or is_up(srv)):
            out[name] = srv
    return out
