"""Which Patroni member each HAProxy server is: by its name, as the user mapped it, or by address.

Server names are the operator's own (`node1`, `postgresql_10.0.0.11_5432`, `pg-a`): every rule
that joins routing to roles asks ``member_of`` here, never the server's name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from pgtop_ha.models.probe import member_at
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer

UNJOINED_FIX = "map them in [haproxy] members, or let HAProxy show addresses (stats show-legends)"

Locate = Callable[[str | None, int | None], str | None]
"""The member listening at a host and port (collect's membership.locate)."""


def member_of(srv: HAProxyServer) -> str:
    """The member this server routes to: the joined member, else the server's own name."""
    return srv.member or srv.server


def split_addr(addr: str | None) -> tuple[str | None, int | None]:
    """HAProxy's ``addr`` cell (``10.0.0.11:5432``, ``[::1]:5432``) as host and port."""
    if not addr or ":" not in addr:
        return None, None
    host, _, port = addr.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return (host or None), (int(port) if port.isdigit() and len(port) <= 5 else None)


def joined(
    servers: tuple[HAProxyServer, ...],
    names: Collection[str],
    mapped: Mapping[str, str],
    locate: Locate,
) -> tuple[HAProxyServer, ...]:
    """``servers`` with ``member`` set where a server is not named as its member.

    The user's map (``[haproxy] members``) comes first, then a member's own name, then the
    server's address (when HAProxy shows it) against the members' PostgreSQL host and port.
    Servers that need nothing keep their identity, so a lab named as its members costs nothing.
    """
    out: list[HAProxyServer] = []
    changed = False
    for srv in servers:
        member = mapped.get(srv.server)
        if member is None and srv.server not in names:
            member = locate(*split_addr(srv.addr))
        if member == srv.server:
            member = None
        if member != srv.member:
            srv = srv.model_copy(update={"member": member})
            changed = True
        out.append(srv)
    return tuple(out) if changed else servers


def member_listening(snapshot: ClusterSnapshot, host: str | None, port: int | None) -> str | None:
    """The member whose PostgreSQL listens at ``host``:``port`` (a WAL receiver's sender), or None."""
    known = tuple((n.name, n.host, n.port) for n in snapshot.nodes) + tuple(
        (m.name, m.host, m.port) for m in snapshot.members
    )
    return member_at(known, host, port)


def upstream_of(snapshot: ClusterSnapshot, name: str) -> str | None:
    """The member a standby streams from, by its WAL receiver (None: not known, or not a standby)."""
    n = snapshot.node(name)
    wr = None if n is None or not n.in_recovery else n.wal_receiver
    if wr is None or not wr.sender_host:
        return None
    port = f":{wr.sender_port}" if wr.sender_port else ""
    return member_listening(snapshot, wr.sender_host, wr.sender_port) or wr.sender_host + port


def known_names(snapshot: ClusterSnapshot) -> frozenset[str]:
    """Every member the console knows: Patroni's members and the polled nodes."""
    return frozenset(m.name for m in snapshot.members) | frozenset(n.name for n in snapshot.nodes)


def unjoined(servers: Iterable[HAProxyServer], known: Collection[str]) -> list[str]:
    """Names of servers that are no known member (sorted, each once)."""
    return sorted({srv.server for srv in servers if member_of(srv) not in known})
