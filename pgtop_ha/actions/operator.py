"""Actions: the operator's switchover, failover, pause, stats resets and backend signals, each audited.

Basic credentials go only to REST roots whose api_url is exactly scheme://host:port/patroni on an
allowed host; resets and signals connect only to allowed hosts, never sending a cleartext password.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from pgtop_ha import pgguard
from pgtop_ha.actions.audit import AuditListener, AuditLog
from pgtop_ha.actions.backend_signal import BackendTarget, SignalKind, signal_backend
from pgtop_ha.actions.patroni_writer import PatroniReply, PatroniWriter
from pgtop_ha.actions.reset_scopes import ResetScope, ResetTarget
from pgtop_ha.actions.results import ActionResult, AuditEntry, NodeResult, Progress
from pgtop_ha.actions.stats_reset import StatsResetter
from pgtop_ha.clock import Clock
from pgtop_ha.models.roles import is_leader_role
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.models.urls import host_of, member_api_url, redact

SWITCHOVER_TIMEOUT_S = 60.0
POLL_EVERY_S = 0.5


def _leader_of(cluster: Any) -> str | None:
    """The running leader's name from a /cluster document."""
    if not isinstance(cluster, dict):
        return None
    for member in cluster.get("members") or ():
        if not isinstance(member, dict):
            continue
        role = member.get("role")
        if isinstance(role, str) and is_leader_role(role) and member.get("state") == "running":
            return str(member.get("name"))
    return None


def _redacted(result: ActionResult) -> ActionResult:
    """``result`` with URL credentials masked in every text it shows."""
    return result.model_copy(
        update={
            "message": redact(result.message),
            "reason": redact(result.reason) if result.reason is not None else None,
            "steps": tuple(redact(s) for s in result.steps),
            "nodes": tuple(n.model_copy(update={"message": redact(n.message)}) for n in result.nodes),
        }
    )


class Actions:
    """The only write path: Patroni requests and stats resets, each appended to the audit log."""

    def __init__(
        self,
        writer: PatroniWriter,
        resetter: StatsResetter,
        audit: AuditLog,
        clock: Clock,
        *,
        takeover_timeout_s: float = SWITCHOVER_TIMEOUT_S,
        poll_every_s: float = POLL_EVERY_S,
        patroni_hosts: HostPolicy | None = None,
        postgres_hosts: HostPolicy | None = None,
        allow_cleartext_password: bool = False,
    ) -> None:
        """Compose the Patroni writer, the stats resetter and the audit log."""
        self.writer = writer
        self.resetter = resetter
        self.audit = audit
        self.clock = clock
        self.takeover_timeout_s = takeover_timeout_s
        self.poll_every_s = poll_every_s
        # Unset policies still refuse link-local and metadata addresses.
        self.patroni_hosts = patroni_hosts or HostPolicy()
        self.postgres_hosts = postgres_hosts or HostPolicy()
        self.allow_cleartext_password = allow_cleartext_password

    def audit_entries(self) -> tuple[AuditEntry, ...]:
        """This session's audit entries, oldest first."""
        return self.audit.entries()

    def on_audit(self, listener: AuditListener) -> None:
        """Call ``listener`` with every new audit entry (the Events pane)."""
        self.audit.subscribe(listener)

    async def aclose(self) -> None:
        """Release the HTTP client."""
        await self.writer.aclose()

    def _elapsed(self, started: datetime) -> float:
        return max(0.0, (self.clock() - started).total_seconds())

    def _member_roots(self, cluster: Any) -> Iterator[str]:
        """api_urls from a /cluster document that the write path may send credentials to."""
        if not isinstance(cluster, dict):
            return
        for member in cluster.get("members") or ():
            if not isinstance(member, dict) or not member.get("api_url"):
                continue
            try:
                url = member_api_url(str(member["api_url"]))
            except ValueError:
                continue  # not scheme://host:port/patroni: never a place to send credentials
            if self.patroni_hosts.refusal(host_of(url)) is None:
                yield url

    def _finish(self, result: ActionResult) -> ActionResult:
        result = _redacted(result)
        self.audit.record(result)
        if self.audit.last_error is not None:
            result = result.model_copy(
                update={"message": f"{result.message} (not audited: {self.audit.last_error})"}
            )
        return result

    def _from_reply(
        self,
        action: str,
        target: str | None,
        reply: PatroniReply,
        started: datetime,
        steps: Sequence[str] = (),
        ok_message: str | None = None,
    ) -> ActionResult:
        if reply.ok:
            message = ok_message or reply.text or f"{action}: {reply.status}"
            reason = None
        elif reply.status is None:
            message, reason = f"{action} not sent: {reply.text}", reply.text
        else:
            message = f"{action} refused ({reply.status}): {reply.text or 'no reason given'}"
            reason = reply.text
        return ActionResult(
            action=action,
            target=target,
            ok=reply.ok,
            status=reply.status,
            reason=reason,
            message=message,
            started_at=started,
            duration_s=self._elapsed(started),
            steps=tuple(steps),
        )

    async def _observe_leader(
        self, wanted: str | None, old: str | None, started: datetime, say: Progress
    ) -> str | None:
        """Poll /cluster until ``wanted`` (or anyone but ``old``) leads, or time runs out."""
        last: str | None = None
        while self._elapsed(started) < self.takeover_timeout_s:
            reply = await self.writer.get_json("/cluster")
            self.writer.learn(self._member_roots(reply.data))
            leader = _leader_of(reply.data)
            if leader is not None and (leader == wanted or (wanted is None and leader != old)):
                return leader
            now = f"leader is {leader or 'none yet'}"
            if now != last:
                say(f"waiting: {now} ({self._elapsed(started):.1f} s)")
                last = now
            await asyncio.sleep(self.poll_every_s)
        return None

    async def _takeover(
        self,
        action: str,
        leader: str | None,
        candidate: str | None,
        scheduled_at: datetime | None,
        progress: Progress | None,
    ) -> ActionResult:
        started = self.clock()
        steps: list[str] = []

        def say(step: str) -> None:
            step = redact(step)
            steps.append(step)
            if progress is not None:
                progress(step)

        body: dict[str, Any] = {}
        if leader is not None:
            body["leader"] = leader
        if candidate is not None:
            body["candidate"] = candidate
        if scheduled_at is not None:
            body["scheduled_at"] = scheduled_at.isoformat()
        target = candidate or leader
        arrow = f"{leader or '(no leader)'} → {candidate or 'any'}"
        say(f"POST /{action} {arrow}")
        reply = await self.writer.request("POST", f"/{action}", body, slow=True)
        say(f"Patroni answered {reply.status or 'nothing'}: {reply.text}")
        if reply.status == 202 or (reply.ok and scheduled_at is not None):
            return self._finish(
                self._from_reply(
                    action,
                    target,
                    reply,
                    started,
                    steps,
                    ok_message=f"{action} {arrow} scheduled for {body.get('scheduled_at')}",
                )
            )
        # A timed-out POST may still be carried out, so watch the cluster for it too.
        if not reply.ok and reply.status is not None:
            return self._finish(self._from_reply(action, target, reply, started, steps))
        say(f"waiting for {candidate or 'a new leader'} to lead")
        new_leader = await self._observe_leader(candidate, leader, started, say)
        if new_leader is None:
            text = (
                f"{action} {arrow}: no new leader observed within "
                f"{self.takeover_timeout_s:.0f} s; Patroni said: {reply.text}"
            )
            result = ActionResult(
                action=action,
                target=target,
                ok=False,
                status=reply.status,
                reason=reply.text,
                message=text,
                started_at=started,
                duration_s=self._elapsed(started),
                steps=tuple(steps),
            )
            return self._finish(result)
        elapsed = self._elapsed(started)
        # No timeline here: /cluster reports the old one until the new leader's checkpoint.
        say(f"{new_leader} leads")
        result = ActionResult(
            action=action,
            target=target,
            ok=True,
            status=reply.status,
            message=(f"{action} done: {new_leader} leads after {elapsed:.1f} s"),
            started_at=started,
            duration_s=elapsed,
            new_leader=new_leader,
            steps=tuple(steps),
        )
        return self._finish(result)

    async def switchover(
        self,
        leader: str,
        candidate: str | None,
        scheduled_at: datetime | None = None,
        *,
        progress: Progress | None = None,
    ) -> ActionResult:
        """POST /switchover, then wait until the candidate is seen leading (or a timeout)."""
        return await self._takeover("switchover", leader, candidate, scheduled_at, progress)

    async def failover(self, candidate: str, *, progress: Progress | None = None) -> ActionResult:
        """POST /failover to ``candidate`` (for a cluster without a leader), then wait for it."""
        return await self._takeover("failover", None, candidate, None, progress)

    async def cancel_switchover(self) -> ActionResult:
        """DELETE /switchover: drop a scheduled switchover."""
        started = self.clock()
        reply = await self.writer.request("DELETE", "/switchover")
        return self._finish(self._from_reply("cancel_switchover", None, reply, started))

    async def set_pause(self, paused: bool) -> ActionResult:
        """PATCH /config {"pause": ...}: enter or leave maintenance mode."""
        started = self.clock()
        action = "pause" if paused else "resume"
        reply = await self.writer.request("PATCH", "/config", {"pause": paused})
        ok_message = (
            "maintenance mode on: Patroni will not fail over"
            if paused
            else "maintenance mode off: Patroni manages the cluster again"
        )
        return self._finish(self._from_reply(action, None, reply, started, ok_message=ok_message))

    async def reset_stats(self, scope: ResetScope, nodes: Sequence[ResetTarget]) -> ActionResult:
        """Run ``scope``'s reset function on each of ``nodes``; one result line per node."""
        started = self.clock()
        target = ",".join(n.name for n in nodes) or None
        action = f"reset {scope.call}"
        results = (
            await self._run_allowed(nodes, lambda allowed: self.resetter.reset(scope, allowed))
            if nodes
            else []
        )
        ok = bool(results) and all(r.ok for r in results)
        if not results:
            message = f"{scope.call}: no node chosen"
        elif ok:
            message = f"{scope.call} done on {target}"
        else:
            message = "; ".join(r.message for r in results if not r.ok)
        result = ActionResult(
            action=action,
            target=target,
            ok=ok,
            message=message,
            started_at=started,
            duration_s=self._elapsed(started),
            nodes=tuple(results),
        )
        return self._finish(result)

    async def signal_backend(self, kind: SignalKind, target: BackendTarget) -> ActionResult:
        """Cancel the query of, or terminate, one backend; its result line says what happened."""
        started = self.clock()

        async def send(allowed: Sequence[ResetTarget]) -> list[NodeResult]:
            return [await signal_backend(self.resetter, kind, target)] if allowed else []

        (result,) = await self._run_allowed([target.node], send)
        who = " ".join(x for x in (target.usename, target.application_name) if x)
        action = f"{kind} backend {target.pid}" + (f" ({who})" if who else "")
        out = ActionResult(
            action=action,
            target=target.node.name,
            ok=result.ok,
            message=result.message,
            started_at=started,
            duration_s=self._elapsed(started),
            nodes=(result,),
        )
        return self._finish(out)

    async def _run_allowed(
        self,
        nodes: Sequence[ResetTarget],
        run: Callable[[Sequence[ResetTarget]], Awaitable[list[NodeResult]]],
    ) -> list[NodeResult]:
        """``run`` on the nodes postgres' policy allows; the others get their refusal."""
        refused: dict[str, str] = {}
        for node in nodes:
            why = self.postgres_hosts.refusal(node.host)
            if why is not None:
                if self.postgres_hosts.restricted and "never contacted" not in why:
                    why = f"{node.host} is not in postgres.allowed_hosts; not contacted"
                refused[node.name] = f"{node.name} ({node.host}:{node.port}): {why}"
        allowed = [n for n in nodes if n.name not in refused]
        done: dict[str, NodeResult] = {}
        if allowed:
            try:
                with pgguard.guarded(self.allow_cleartext_password) as guard:
                    for result in await run(allowed):
                        done[result.node] = result
            except pgguard.CleartextRefused as exc:
                refused.update({n.name: f"{n.name}: {exc}" for n in allowed})
            else:
                for node in allowed:
                    why = pgguard.refusal_for(guard, node.host, node.port)
                    got = done.get(node.name)
                    if why is not None and got is not None and not got.ok:
                        done[node.name] = got.model_copy(
                            update={"message": f"{node.name} ({node.host}:{node.port}): {why}"}
                        )
        return [done.get(n.name) or NodeResult(node=n.name, ok=False, message=refused[n.name]) for n in nodes]
