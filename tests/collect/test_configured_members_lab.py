"""A member /cluster does not list, against the real lab: the configured REST roots still show it.

A console started after a member's Patroni stopped gracefully (its /cluster key is gone) knew
nothing of it: only "HAProxy: 1 server is no Patroni member", under a header of two healthy
nodes. Every configured REST root no listed member answers at is now a member of its own until
/cluster lists it again; a root that answers for a listed member (another name for it) is none.
"""

from __future__ import annotations

import asyncio

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.problems import member_problems
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.lab.procs import poll
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.settings import Settings
from tests.support.lab_polls import quiet, until_seen

pytestmark = pytest.mark.lab


async def test_a_member_stopped_before_the_console_started_is_shown(lab: Lab, lab_settings: Settings) -> None:
    leader = await asyncio.to_thread(lab.leader)
    # Not the first configured root: /cluster is asked of that one first, and when it refuses,
    # of every other root at once, the alias among them (which may then answer it; see below).
    victim = next(n for n in NODE_NAMES[1:] if n != leader)
    index = lab.layout.names.index(victim)
    label = f"127.0.0.1:{lab.layout.rest_port(index)}"
    first = lab.layout.names.index(leader or NODE_NAMES[0])
    # Another name for a listed member's REST API (as a VIP or a DNS name would be): no member.
    alias = f"http://localhost:{lab.layout.rest_port(first)}"
    patroni = lab_settings.patroni.model_copy(update={"urls": (*lab_settings.patroni.urls, alias)})
    settings = lab_settings.model_copy(update={"patroni": patroni})

    await asyncio.to_thread(faults.stop_patroni, quiet(lab), victim)

    def gone() -> bool:
        return victim not in {m["name"] for m in (lab.cluster() or {}).get("members", [])}

    assert await asyncio.to_thread(poll, gone, 60), f"{victim} still listed 60s after its Patroni stopped"

    poller = Poller.from_settings(settings)
    timeline = Timeline()
    seen: list[ClusterSnapshot] = []

    def keep(snap: ClusterSnapshot) -> None:
        seen.append(snap)
        timeline.observe(snap)

    try:
        snap = await until_seen(
            poller, lambda s: s.member(label) is not None, 20, f"{label} as a member", keep
        )
        member = snap.member(label)
        assert member is not None and member.unlisted and not member.reachable
        assert member.error is not None and "configured in [patroni] urls" in member.error
        assert snap.node(label) is None  # where its PostgreSQL listens is not known: no guess
        problems = member_problems(snap, label, settings.thresholds, settings.haproxy.pools(), snap.taken_at)
        assert [(p.level, p.text) for p in problems] == [
            (Level.CRIT, "not in Patroni's /cluster, REST unreachable")
        ]
        names = {m.name for m in snap.members}
        assert victim not in names and len(names) == len(NODE_NAMES)

        await asyncio.to_thread(faults.start_patroni, quiet(lab), victim)

        def back(s: ClusterSnapshot) -> bool:
            m, n = s.member(victim), s.node(victim)
            return (
                m is not None
                and m.role is not None
                and n is not None
                and n.error is None
                and n.timeline is not None
            )

        snap = await until_seen(poller, back, 60, f"{victim} listed and read", keep)
        assert snap.member(label) is None and not any(m.unlisted for m in snap.members)
        # The alias answered for a listed member from the first cycle: never a member of its own.
        # Asked, and known for what it is: another name for a member, or a root that itself
        # answered /cluster (a running Patroni of this cluster: no member missing there).
        membership = poller.membership
        assert alias in membership._aliases or membership._preferred == alias
        assert all(
            m.name != "localhost" and not m.name.startswith("localhost:") for s in seen for m in s.members
        )
        said = [(e.node, e.text) for e in timeline.events()]
        assert (victim, "member joined") in said
        # Its slots existed on disk all along: heard for the first time is not "created".
        assert not [t for n, t in said if n == victim and t.endswith(" created")], said
    finally:
        await poller.aclose()
