"""Parameters read from a real lab: a postmaster parameter changed through Patroni, pending a restart."""

from __future__ import annotations

import asyncio
import io

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.parameters import parameters
from pgtop_ha.settings import Settings
from tests.support.lab_polls import until_seen

pytestmark = pytest.mark.lab


async def test_a_pending_restart_shows_with_its_context_and_patroni_value(
    lab: Lab, lab_settings: Settings
) -> None:
    quiet = Lab(lab.layout, out=io.StringIO())
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"parameters"}))
    try:
        await asyncio.to_thread(faults.pending_restart, quiet)
        try:
            name = faults.PENDING_PARAMETER
            snap = await until_seen(
                poller, lambda s: any(p.name == name and len(p.pending) == 3 for p in parameters(s)), 60, name
            )
            found = next(p for p in parameters(snap) if p.name == faults.PENDING_PARAMETER)
            assert found.context == "postmaster"
            config = snap.patroni_config
            assert config is not None and config.parameters.get(faults.PENDING_PARAMETER) is not None
            assert found.patroni == config.parameters[faults.PENDING_PARAMETER]
            # Every member still runs with the old value: the new one waits for the restart.
            assert len(set(found.values.values())) == 1 and found.patroni not in found.values.values()
        finally:
            await asyncio.to_thread(faults.pending_restart, quiet, True)
        # Without the pane on screen the settings are not read at all.
        poller.set_needs(frozenset())
        snap = await poller.cycle(budget=2.0)
        assert all(
            n.parameters is None and n.unavailable["parameters"].startswith("not read") for n in snap.nodes
        )
    finally:
        await poller.aclose()
