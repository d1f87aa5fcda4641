"""Who the members are and how each is reached: configured nodes, /cluster's list, discovery.

A listed member gets its sources (its /patroni poll, its PostgreSQL reader); one gone is kept
FORGET_AFTER_S (a configured root never), within max_members. /cluster is asked of the preferred
root first, then of every root after HEDGE_S. Every host is checked against the allowed hosts first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pgtop_ha.clock import Clock
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.patroni import ClusterView, HistoryRead, OwnView, PatroniClient, describe_http_error
from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.collect.source import Reading, Source
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.probe import member_at
from pgtop_ha.models.snapshot import Member, PatroniConfig
from pgtop_ha.models.sources import UNSETTLED_S
from pgtop_ha.models.trust import HostPolicy, never_contacted
from pgtop_ha.models.urls import host_of, member_api_url, redact, root_of
from pgtop_ha.settings import Settings

HEDGE_S = 0.25  # ask the other members for /cluster when the preferred one is this slow
REFRESH_EVERY = 10  # cycles between /history and /config fetches (sooner on a leader change)
FORGET_AFTER_S = 600.0  # a member gone from /cluster is still shown this long


@dataclass
class Discovered:
    """What the /cluster task learned: the view, and /history + /config when they were due."""

    view: ClusterView
    root: str
    history: HistoryRead | None = None
    config: PatroniConfig | None = None
    errors: tuple[str, ...] = ()


@dataclass
class MemberSources:
    """One member's sources: Patroni's /cluster entry, its own /patroni poll, its PostgreSQL reader.

    ``api_url`` is what is shown (without credentials); ``own_url`` is what is polled. A member
    whose REST or PostgreSQL host is refused keeps the reason and has no source for it.
    """

    name: str
    api_url: str | None
    node: NodeReader | None
    own: Source[OwnView] | None
    cluster_entry: Member | None = None
    static: bool = False
    gone_since: float | None = None
    own_url: str | None = None
    api_refusal: str | None = None
    pg_refusal: str | None = None
    pg_host: str | None = None
    pg_port: int | None = None
    # What /cluster said about where it is: a change makes a new slot (and drops the old root).
    key: tuple[str | None, str | None, int | None] = (None, None, None)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    own_started: float | None = None  # loop time of the last own /patroni GET started
    # Made from a configured REST root that /cluster does not list (its only source is /patroni).
    configured: bool = False

    def start(self, own: bool = True) -> set[asyncio.Task[None]]:
        """Start (or rejoin) this member's polls; ``own``: its /patroni GET too (else only a running one)."""
        out: set[asyncio.Task[None]] = set()
        if self.own is not None:
            if own and self.own.running_for() is None:
                self.own_started = asyncio.get_running_loop().time()
            if own or self.own.running_for() is not None:
                out.add(self.own.start())
        if self.node is not None:
            out.add(self.node.start())
        return out

    async def aclose(self) -> None:
        """Stop this member's polls and close its connection."""
        if self.own is not None:
            await self.own.aclose()
        if self.node is not None:
            await self.node.aclose()


def _follow(slot: MemberSources, entry: Member) -> None:
    """Take /cluster's entry for ``slot``; a new Patroni state ends its PostgreSQL reader's backoff."""
    old, slot.cluster_entry = slot.cluster_entry, entry
    if slot.node is not None and (old is None or old.state != entry.state):
        slot.node.retry_now()


def http_describer(what: str) -> Callable[[BaseException], str]:
    """Lines naming ``what`` (redacted: a configured root may carry user:password)."""
    # URLs may carry user:password (a configured root): every line is redacted.
    shown = redact(what)

    def describe(exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            return f"{shown}: no answer (timeout)"
        if isinstance(exc, Exception):
            return redact(describe_http_error(exc, shown))
        return f"{shown}: {exc.__class__.__name__}"

    return describe


def refusal(policy: HostPolicy, host: str | None, section: str) -> str | None:
    """Why ``host`` is not contacted under ``policy`` (naming ``section``.allowed_hosts), or None."""
    reason = policy.refusal(host)
    if reason is None or not host:
        return reason
    if never_contacted(host) is None:
        return f"{host} is not in {section}.allowed_hosts; not contacted"
    return reason


class Membership:
    """The members and their sources, following /cluster; the discovery roots it is asked of."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        patroni: PatroniClient,
        *,
        proc: Path,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._proc = proc
        self.patroni = patroni
        self._max_members = settings.max_members
        self._rest_hosts = HostPolicy.of(settings.patroni.allowed_hosts)
        self._pg_hosts = HostPolicy.of(settings.postgres.allowed_hosts)
        self.members: dict[str, MemberSources] = {}
        # Configured REST roots (those the policy allows); refused ones are shown every cycle.
        self._roots: list[str] = []
        self.refused: list[str] = []
        for url in settings.patroni.urls:
            self._add_root(url)
        self._preferred: str | None = None
        self.history: HistoryRead | None = None
        self.config: PatroniConfig | None = None
        self._refresh_key: tuple[str | None, int | None] | None = None
        self._since_refresh = REFRESH_EVERY
        self._applied: object | None = None
        self._needs: Needs = frozenset({"memory"})  # until the screen says what it shows
        self.on_lost = on_lost  # a node's kept connection closed under it: told at once
        self._signature: object | None = None  # /cluster's roles, states and timelines last seen
        # Each member's own role and timeline, as PostgreSQL and its /patroni last said (note_views).
        self._views: dict[str, tuple[object, object]] = {}
        self._cluster_started: float | None = None  # loop time of the last /cluster GET started
        self._unsettled_until: datetime | None = None
        # Configured roots that answered for a listed member (a VIP, a host name for an address).
        self._aliases: set[str] = set()
        for node in settings.nodes:
            api = api_refusal = None
            if node.patroni_url:
                # Settings made it scheme://host:port (credentials, if any, are stripped on GET).
                api_refusal = refusal(self._rest_hosts, host_of(node.patroni_url), "patroni")
                self._add_root(node.patroni_url)
                api = f"{node.patroni_url}/patroni"
            self.members[node.name] = self.sources_for(
                node.name, api, api_refusal, node.host, node.port, node.dbname, static=True
            )
        self.cluster: Source[Discovered] | None = None
        if self._roots:
            limit = settings.patroni.timeout * 2 + 0.5
            describe = http_describer("patroni /cluster")
            self.cluster = Source("patroni /cluster", self._discover, limit, clock, describe)

    def next_cycle(self) -> None:
        """Count a cycle: /history and /config are fetched again every REFRESH_EVERY."""
        self._since_refresh += 1

    def set_needs(self, needs: Needs) -> None:
        """Give every PostgreSQL reader these optional reads (models/needs.py)."""
        self._needs = needs
        for sources in self.members.values():
            if sources.node is not None:
                sources.node.needs = needs

    def restless(self) -> bool:
        """True while anything looks unsettled: every source is then asked every cycle.

        Unsettled: a node's PostgreSQL not answering (or waiting a second or more), a member's
        REST API failing, /cluster failing, or a member's role, state or timeline changed in the
        last UNSETTLED_S (as /cluster, its PostgreSQL or its own /patroni said it: note_views).
        A killed primary that Patroni restarts in place is down for a few seconds only: a probe
        or a Patroni GET every calm interval would miss what they exist to show.
        """
        if self._unsettled_until is not None and self._clock() < self._unsettled_until:
            return True
        if self.cluster is not None and self.cluster.reading().error is not None:
            return True
        for slot in self.members.values():
            if slot.cluster_entry is None and not slot.static:
                # Not listed (it left, or only a configured root names it): its leaving made the
                # UNSETTLED_S above; a member stopped for hours keeps nothing restless.
                continue
            if slot.node is not None and slot.node.unsettled():
                return True
            if slot.own is not None and slot.own.reading().error is not None:
                return True
        return False

    def own_due(self, slot: MemberSources, restless: bool) -> bool:
        """Whether this member's own /patroni is asked this cycle (see PatroniSettings.calm_interval)."""
        return self._due(slot.own_started, restless)

    def cluster_due(self, restless: bool) -> bool:
        """Whether /cluster is asked this cycle: every cycle while restless, else each calm_interval."""
        return self._due(self._cluster_started, restless)

    def _due(self, started: float | None, restless: bool) -> bool:
        calm = self._settings.patroni.calm_interval
        if calm <= 0 or restless or started is None:
            return True
        # A little slack so a 5 s calm interval at a 1 s cadence asks every 5th cycle, not 6th.
        return asyncio.get_running_loop().time() - started >= calm - 0.2

    def start_cluster(self, restless: bool) -> asyncio.Task[None] | None:
        """The /cluster GET of this cycle: a new one when due (cluster_due), else only one still running."""
        source = self.cluster
        if source is None or not (self.cluster_due(restless) or source.running_for() is not None):
            return None
        if source.running_for() is None:
            self._cluster_started = asyncio.get_running_loop().time()
        return source.start()

    def note_views(self) -> None:
        """A member's own role or timeline changed (PostgreSQL's or its /patroni's): restless a while.

        While calm /cluster is asked every calm_interval, not each cycle; what Patroni does next
        (a promotion, a demotion, a new timeline) shows first in the members' own reads, and from
        then on /cluster is asked every cycle for UNSETTLED_S, as after a change it showed itself.
        """
        views: dict[str, tuple[object, object]] = {
            name: (
                slot.node.role_key() if slot.node is not None else None,
                (own.role, own.state, own.timeline) if (own := self._own_value(slot)) is not None else None,
            )
            for name, slot in self.members.items()
        }
        before, self._views = self._views, views
        # A first answer (a console starting, a member joining) is news of nothing changed; a
        # source that fails is restless on its own (restless()): only a known value that moved.
        if any(
            old is not None and old != new
            for name, was in before.items()
            if name in views
            for old, new in zip(was, views[name], strict=True)
        ):
            self._unsettled_until = self._clock() + timedelta(seconds=UNSETTLED_S)

    @staticmethod
    def _own_value(slot: MemberSources) -> OwnView | None:
        return slot.own.reading().value if slot.own is not None else None

    def _note_changes(self, view: ClusterView) -> None:
        """A change in /cluster's roles, states or timelines makes the next UNSETTLED_S restless."""
        signature = (
            view.info.leader,
            tuple(sorted((m.name, m.role, m.state, m.timeline) for m in view.members)),
        )
        if self._signature is not None and signature != self._signature:
            self._unsettled_until = self._clock() + timedelta(seconds=UNSETTLED_S)
        self._signature = signature

    def locate(self, addr: str | None, port: int | None) -> str | None:
        """The member whose PostgreSQL listens at ``addr``:``port`` (a probe's answering server)."""
        known = [(slot.name, slot.pg_host, slot.pg_port) for slot in self.members.values()]
        # A member known by a host name is also known by the address its server answered on.
        known += [
            (slot.name, slot.node.server_addr, slot.pg_port)
            for slot in self.members.values()
            if slot.node is not None and slot.node.server_addr not in (None, slot.pg_host)
        ]
        return member_at(tuple(known), addr, port)

    def _add_root(self, url: str) -> None:
        reason = refusal(self._rest_hosts, host_of(url), "patroni")
        if reason is not None:
            line = f"patroni {redact(url)}: {reason}"
            if line not in self.refused:
                self.refused.append(line)
        elif url not in self._roots:
            self._roots.append(url)

    def _member_api(self, api_url: str | None) -> tuple[str | None, str | None]:
        """A listed member's URL to poll, or why it is not polled (a bad shape, a refused host)."""
        if api_url is None:
            return None, None
        try:
            url = member_api_url(api_url)
        except ValueError as exc:
            return None, f"{exc}; not polled"
        reason = refusal(self._rest_hosts, host_of(url), "patroni")
        return (None, reason) if reason is not None else (url, None)

    def sources_for(
        self,
        name: str,
        api_url: str | None,
        api_refusal: str | None,
        host: str | None,
        port: int | None,
        dbname: str | None,
        *,
        static: bool = False,
        shown_api_url: str | None = None,
    ) -> MemberSources:
        node = None
        pg_refusal = refusal(self._pg_hosts, host, "postgres") if host else None
        if host and pg_refusal is None and self._settings.postgres.enabled:
            target = Target(
                name=name,
                host=host,
                port=port or 5432,
                dbname=dbname or self._settings.postgres.dbname,
            )
            node = NodeReader(target, self._settings.postgres, self._clock, proc=self._proc)
            node.needs = self._needs
            node.on_lost = self.on_lost
        own = None
        if api_url and api_refusal is None:

            async def fetch(url: str = api_url) -> OwnView:
                return await self.patroni.own(url)

            own = Source(
                f"patroni {redact(api_url)}",
                fetch,
                self._settings.patroni.timeout + 0.5,
                self._clock,
                http_describer(api_url),
            )
        shown = shown_api_url if shown_api_url is not None else api_url
        return MemberSources(
            name=name,
            api_url=redact(shown) if shown else None,
            node=node,
            own=own,
            static=static,
            own_url=api_url if own is not None else None,
            api_refusal=api_refusal,
            pg_refusal=pg_refusal,
            pg_host=host,
            pg_port=(port or 5432) if host else None,
        )

    def _apply(self, view: ClusterView, root: str | None = None) -> list[MemberSources]:
        """Follow /cluster's membership; returns slots to close (replaced or forgotten)."""
        loop_now = asyncio.get_running_loop().time()
        listed = {m.name for m in view.members}
        retired: list[MemberSources] = []
        for entry in view.members:
            slot = self.members.get(entry.name)
            if slot is not None and slot.static:
                _follow(slot, entry)
                continue
            if self._settings.nodes:
                continue  # nodes given explicitly: /cluster only adds roles, never members
            key = (entry.api_url, entry.host, (entry.port or 5432) if entry.host else None)
            if slot is not None and slot.key != key:
                retired.append(slot)
                slot = None
            if slot is None:
                api_url, api_refusal = self._member_api(entry.api_url)
                slot = self.sources_for(
                    entry.name,
                    api_url,
                    api_refusal,
                    entry.host,
                    entry.port,
                    None,
                    shown_api_url=entry.api_url,
                )
                slot.key = key
                self.members[entry.name] = slot
            _follow(slot, entry)
            slot.gone_since = None
        for name, slot in list(self.members.items()):
            if name in listed or slot.static or slot.configured:
                continue
            slot.cluster_entry = None
            if slot.gone_since is None:
                slot.gone_since = loop_now
            elif loop_now - slot.gone_since > FORGET_AFTER_S and self._root(slot) not in self._roots:
                # One at a configured root stays: the configuration says it is a member.
                retired.append(self.members.pop(name))
        # Members no longer listed are still polled a while, but never beyond max_members in
        # all: the longest gone are forgotten first.
        discovered = [s for s in self.members.values() if not s.static]
        excess = len(discovered) - self._max_members
        if excess > 0:
            gone = sorted(
                (s for s in discovered if s.gone_since is not None), key=lambda s: s.gone_since or 0.0
            )
            for slot in gone[:excess]:
                retired.append(self.members.pop(slot.name))
        if not self._settings.nodes:
            retired += self._follow_roots(root)
        return retired

    @staticmethod
    def _root(slot: MemberSources) -> str | None:
        return root_of(slot.own_url) if slot.own_url else None

    def _follow_roots(self, answered: str | None) -> list[MemberSources]:
        """A slot for each configured root no member answers at; returns slots to close.

        ``answered``, the root /cluster came from, is a running Patroni of this cluster: no
        member missing there, and not worth a /patroni GET each cycle to learn so.
        """
        retired: list[MemberSources] = []
        covered = {self._root(s) for s in self.members.values() if not s.configured} | {answered}
        for name, slot in list(self.members.items()):
            root = self._root(slot)
            if not slot.configured or root is None:
                continue
            said, alias = self.said(slot), self._alias(slot)
            if root in covered or alias:
                # Listed after all, or the root answers for a member shown (a VIP, a host name).
                if alias:
                    self._aliases.add(root)
                retired.append(self.members.pop(name))
            elif said and said != name and said not in self.members:
                # Its Patroni answers but /cluster does not list it: shown by its own name.
                retired.append(self.members.pop(name))
                self._add_configured(root, said)
        covered |= {self._root(s) for s in self.members.values()}
        for root in self._roots:
            if root not in covered and root not in self._aliases:
                self._add_configured(root, self._root_label(root))
        return retired

    def _add_configured(self, root: str, name: str) -> None:
        if name not in self.members:
            slot = self.sources_for(name, f"{root}/patroni", None, None, None, None)
            slot.configured = True
            self.members[name] = slot

    @staticmethod
    def said(slot: MemberSources) -> str | None:
        """The member name a slot's own /patroni last answered with (None: no answer, or no name)."""
        value = Membership._own_value(slot)
        return value.name if value is not None else None

    def _alias(self, slot: MemberSources) -> bool:
        """Its root answers for another member shown (a VIP, a host name for an address)."""
        said = self.said(slot)
        return said is not None and said != slot.name and said in self.members

    def unsure(self, slot: MemberSources) -> bool:
        """A configured root's slot not to show: no answer yet, no name in it, or a listed member's."""
        # Shown once its root has answered or failed: one that answers for a listed member (a
        # VIP, a host name for the address /cluster gives) is no member of its own, and must not
        # flash up as one in the cycle before _follow_roots retires it.
        if slot.own is None:
            return False
        reading = slot.own.reading()
        if reading.value is None:
            return reading.error is None
        # An answer without a name (Patroni before 3.0) cannot tell a member from another name
        # for one: only a root that does not answer at all is shown then.
        return self.said(slot) is None or self._alias(slot)

    def _root_label(self, root: str) -> str:
        """A configured root's name while its member's is unknown: its host, or host:port when shared."""
        host = host_of(root) or root
        if sum(host_of(r) == host for r in self._roots) == 1:
            return host
        return root.split("://", 1)[-1]

    def candidate_roots(self) -> list[str]:
        """Configured roots, then those of members listed now (so at most max_members more)."""
        roots = list(self._roots)
        for slot in self.members.values():
            if slot.static or slot.cluster_entry is None or slot.own_url is None:
                continue
            root = root_of(slot.own_url)
            if root not in roots:
                roots.append(root)
        if self._preferred in roots:
            roots.remove(self._preferred)
            roots.insert(0, self._preferred)
        return roots

    async def _discover(self) -> Discovered:
        roots = self.candidate_roots()
        view, root = await self._first_cluster(roots)
        self._preferred = root
        due = self._since_refresh >= REFRESH_EVERY
        leader = view.info.leader
        timeline = max((m.timeline for m in view.members if m.timeline is not None), default=None)
        key = (leader, timeline)
        if key != self._refresh_key or self.config is None:
            due = True
        found = Discovered(view=view, root=root)
        if not due:
            return found
        history, config = await asyncio.gather(
            self.patroni.history(root), self.patroni.config(root), return_exceptions=True
        )
        errors: list[str] = []
        if isinstance(history, BaseException):
            errors.append(http_describer("patroni /history")(history))
        else:
            found.history = history
        if isinstance(config, BaseException):
            errors.append(http_describer("patroni /config")(config))
        else:
            found.config = config
        if not errors:
            self._refresh_key = key
        found.errors = tuple(errors)
        return found

    async def _first_cluster(self, roots: list[str]) -> tuple[ClusterView, str]:
        """The first good /cluster: the preferred root, then (after HEDGE_S) all others too."""
        if not roots:
            raise ParseError("patroni: no REST URL left to ask; give --patroni URL")
        tasks: dict[asyncio.Task[ClusterView], str] = {}
        errors: list[str] = []
        try:
            first = asyncio.create_task(self.patroni.cluster(roots[0]))
            tasks[first] = roots[0]
            done, _ = await asyncio.wait({first}, timeout=HEDGE_S)
            if first in done and first.exception() is None:
                return first.result(), roots[0]
            for root in roots[1:]:
                tasks[asyncio.create_task(self.patroni.cluster(root))] = root
            pending: set[asyncio.Task[ClusterView]] = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    exc = task.exception()
                    if exc is None:
                        return task.result(), tasks[task]
                    where = f"{tasks[task]}/cluster"
                    errors.append(http_describer(where)(exc) if exc else where)
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
        raise ParseError("; ".join(errors) or "patroni /cluster: no answer")

    def take_cluster(self, reading: Reading[Discovered]) -> list[MemberSources]:
        found = reading.value
        failed = reading.error is not None and self.cluster is not None and self.cluster.finished
        if found is None and failed and not self._settings.nodes:
            # A DCS outage can stop /cluster while each member's /patroni still answers: poll the
            # roots not covered by a member already known, so members are shown by their own word.
            return self._follow_roots(None)
        if found is None or found is self._applied:
            return []
        self._applied = found
        if found.history is not None:
            self.history = found.history
        if found.config is not None:
            self.config = found.config
        if found.history is not None or found.config is not None:
            self._since_refresh = 0
        self._note_changes(found.view)
        return self._apply(found.view, found.root)
