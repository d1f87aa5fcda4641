"""The operator screen: the monitor plus the write keys; it exists only when actions were built."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from textual.binding import Binding

from pgtop_ha.actions import Actions, AuditEntry
from pgtop_ha.actions.backend_signal import SignalKind, backend_target, statement
from pgtop_ha.actions.reset_scopes import ResetScope, ResetTarget, reset_choices
from pgtop_ha.actions.results import ActionResult, Progress
from pgtop_ha.judge.view import TakeoverPlan, takeover_plan
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.text import clean
from pgtop_ha.ui.format import age, query_line, shown
from pgtop_ha.ui.operator.confirm_modal import ConfirmModal
from pgtop_ha.ui.operator.reset_modal import ResetModal
from pgtop_ha.ui.operator.takeover_modal import TakeoverModal
from pgtop_ha.ui.screens.monitor import MonitorScreen

_OPS = Binding.Group("Operator", compact=True)

OPERATOR_HELP = """
[b]Operator keys[/b] (absent in read-only mode; every action goes to the audit log)
  s        switchover to a candidate (failover when there is no leader):
           the healthiest eligible one is preselected; type the cluster name, Enter
  r        reset statistics: choose the scope and node(s), Enter twice
  m        maintenance mode on/off (PATCH /config pause); type the cluster name
  x        cancel a scheduled switchover (DELETE /switchover)
  k / K    cancel the query of / terminate the session under the cursor
           (Sessions, a) or the root blocker of its tree (Locks, l); type its pid
"""


def audit_event(entry: AuditEntry) -> Event:
    """An audit entry as the Events pane lists it."""
    verdict = "ok" if entry.ok else "FAILED"
    return Event(
        at=entry.at,
        kind="action",
        node=entry.target,
        text=f"{entry.user}: {entry.action} {verdict}: {entry.result}",
        severity=0 if entry.ok else 1,
    )


class OperatorScreen(MonitorScreen):
    """MonitorScreen with switchover, failover, maintenance and stats-reset keys."""

    BINDINGS = [
        Binding("s", "takeover", "Switchover", group=_OPS),
        Binding("r", "reset_stats", "Reset stats", group=_OPS),
        Binding("m", "maintenance", "Maintenance", group=_OPS),
        Binding("x", "cancel_switchover", "Cancel sched.", show=False),
        Binding("k", "signal('cancel')", "Cancel query", show=False),
        Binding("K", "signal('terminate')", "Terminate", show=False),
    ]

    def __init__(self, actions: Actions) -> None:
        """Offer ``actions`` on top of the monitor."""
        super().__init__()
        self.actions = actions
        self.last_result: ActionResult | None = None

    def on_mount(self) -> None:
        """Send every audited action to the Events pane."""
        self.actions.on_audit(lambda entry: self.papp.record_event(audit_event(entry)))

    async def on_unmount(self) -> None:
        """Close the write path's HTTP client with the screen."""
        await self.actions.aclose()

    def help_extra(self) -> str:
        """The operator keys, for `?`."""
        return OPERATOR_HELP

    def _snapshot(self) -> ClusterSnapshot | None:
        snap = self.papp.snapshot or (self.papp.history[-1] if self.papp.history else None)
        if snap is None:
            self.notify("no snapshot yet: wait for the first poll", severity="warning", markup=False)
        return snap

    def confirm_word(self, snap: ClusterSnapshot, plan: TakeoverPlan | None = None) -> str:
        """What the operator types to confirm: the cluster name (as shown: cleaned)."""
        # The name may come from Patroni: what is typed must be what the dialog shows.
        for word in (
            self.papp.sections.cluster_name,
            snap.cluster.name,
            plan.leader if plan is not None else None,
        ):
            typed = clean(word or "").strip()
            if typed:
                return typed
        return "yes"

    def _done(self, result: ActionResult | None) -> None:
        if result is None:
            return
        self.last_result = result
        # The message quotes Patroni's answer: cleaned, never markup.
        message = shown(result.message, 500)
        self.notify(message, severity="information" if result.ok else "error", timeout=8, markup=False)

    def action_takeover(self) -> None:
        """Open the switchover (or failover) dialog."""
        snap = self._snapshot()
        if snap is None:
            return
        plan = takeover_plan(snap)
        actions = self.actions

        async def run(candidate: str, when: datetime | None, progress: Progress) -> ActionResult:
            if plan.kind == "failover" or plan.leader is None:
                self.papp.record_action(f"failover to {candidate}", candidate)
                return await actions.failover(candidate, progress=progress)
            self.papp.record_action(f"switchover {plan.leader} → {candidate}", candidate)
            return await actions.switchover(plan.leader, candidate, when, progress=progress)

        self.app.push_screen(
            TakeoverModal(plan, self.confirm_word(snap, plan), run, now=self.papp.clock), self._done
        )

    def action_reset_stats(self) -> None:
        """Open the stats reset dialog."""
        snap = self._snapshot()
        if snap is None:
            return

        async def reset(scope: ResetScope, nodes: Sequence[ResetTarget]) -> ActionResult:
            self.papp.record_action(f"reset {scope.call} on {', '.join(n.name for n in nodes) or 'no node'}")
            return await self.actions.reset_stats(scope, nodes)

        self.app.push_screen(ResetModal(reset_choices(snap), reset, self.actions.resetter.user), self._done)

    def action_signal(self, kind: SignalKind) -> None:
        """Cancel the query of, or terminate, the backend the cursor's row stands for."""
        snap = self._snapshot()
        if snap is None:
            return
        spec = next((p for p in self.registry if p.id == self.main_pane()), None)
        table = self._table()
        key = table.row_under_cursor() if table is not None else None
        chosen = spec.backend_of(key) if spec is not None and spec.backend_of and key else None
        if chosen is None:
            self.notify(
                "k and K act on a session in Sessions (a) or a lock tree in Locks (l)",
                severity="warning",
                markup=False,
            )
            return
        target = backend_target(snap, *chosen)
        if target is None:
            self.notify(
                f"{shown(chosen[0])}: its PostgreSQL address is not known", severity="error", markup=False
            )
            return
        verb = "Cancel the query of" if kind == "cancel" else "Terminate"
        held = f", in its transaction for {age(target.held_s)}" if target.held_s is not None else ""
        # Every part may quote the server (a query, an application name): cleaned line by line.
        detail = "\n".join(
            shown(line, 300)
            for line in (
                f"{statement(kind).replace('$1', str(target.pid))}  on {target.node.name}"
                f"  as {self.actions.resetter.who()}",
                f"pid {target.pid}: {target.usename or '?'} / {target.application_name or '?'},"
                f" {target.state or '?'}{held}",
            )
        )
        detail += "\n" + query_line(target.query or "", 300)

        async def run() -> ActionResult:
            self.papp.record_action(f"{kind} backend {target.pid} on {target.node.name}", target.node.name)
            return await self.actions.signal_backend(kind, target)

        title = f"{verb} backend {target.pid} on {target.node.name}"
        self.app.push_screen(ConfirmModal(shown(title), detail, run, str(target.pid)), self._done)

    def action_maintenance(self) -> None:
        """Toggle Patroni's maintenance mode (pause), after typing the cluster name."""
        snap = self._snapshot()
        if snap is None:
            return
        paused = takeover_plan(snap).paused
        want = not paused
        if want:
            title = "Enter maintenance mode"
            detail = (
                'PATCH /config {"pause": true}: Patroni stops managing PostgreSQL — '
                "no automatic failover until resumed."
            )
        else:
            title = "Leave maintenance mode"
            detail = 'PATCH /config {"pause": false}: Patroni manages the cluster again.'

        async def run() -> ActionResult:
            self.papp.record_action(
                "pause (maintenance mode on)" if want else "resume (maintenance mode off)"
            )
            return await self.actions.set_pause(want)

        self.app.push_screen(ConfirmModal(title, detail, run, self.confirm_word(snap)), self._done)

    def action_cancel_switchover(self) -> None:
        """Cancel a scheduled switchover (DELETE /switchover), after Enter."""
        snap = self._snapshot()
        if snap is None:
            return
        scheduled = snap.cluster.scheduled_switchover
        when = (scheduled or {}).get("at") or (scheduled or {}).get("scheduled_at")
        detail = "DELETE /switchover: " + (
            f"drops the switchover scheduled for {when}."
            if scheduled
            else "none is scheduled as far as the last snapshot shows; Patroni will say so."
        )

        async def cancel() -> ActionResult:
            self.papp.record_action("cancel the scheduled switchover")
            return await self.actions.cancel_switchover()

        self.app.push_screen(ConfirmModal("Cancel the scheduled switchover", detail, cancel), self._done)
