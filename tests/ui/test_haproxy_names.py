"""The HAProxy pane with servers named as in Patroni's example config: joined, or told apart."""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.models.test_servers import as_patroni_example, join
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, settled, table, texts, view_shown


async def _servers(snap: ClusterSnapshot) -> list[str]:
    app, source = make_app([snap])
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        table = app.screen.query_one("#t-haproxy", KeyedTable)
        return [row[2] for row in table.visible_texts() if row[2] != "(pool)"]


async def test_joined_servers_read_as_their_members() -> None:
    shown = await _servers(join(as_patroni_example(fx.healthy(), addresses=True)))
    assert shown == ["node1", "node2", "node3"] * 2


async def test_servers_no_member_keep_what_tells_them_apart() -> None:
    # Before: each of them read "postgresql…" in the 14 columns of the Server column.
    shown = await _servers(join(as_patroni_example(fx.healthy(), addresses=False)))
    assert shown == ["…0.0.1_25410", "…0.0.1_25411", "…0.0.1_25412"] * 2


async def test_one_long_member_name_hides_no_other_column_of_the_cluster_pane() -> None:
    long = "pg-" + "x" * 200 + "-01"
    snaps = [fx.renamed(s, (long, "node2", "node3")) for s in (fx.healthy(),)]
    app, source = make_app(snaps)
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("1")
        await view_shown(pilot, app)
        widget = table(app, "cluster")
        keys = [c.key for c in widget.columns_spec]
        widths = dict(zip(keys, widget.column_widths(), strict=True))
        assert widths["member"] <= 16, widths  # NAME_WIDTH and its padding
        assert sum(widths.values()) <= widget.size.width, widths  # Patroni, Restart, Pause all in view
        names = [r[0] for r in texts(app, "cluster")]
        assert any("…" in n and len(n) <= 14 for n in names), names
