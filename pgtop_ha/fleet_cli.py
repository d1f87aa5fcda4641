"""`pgtop-ha fleet` and `pgtop-ha events --prometheus`: the fleet read through Prometheus (read-only)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.http import Login
from pgtop_ha.collect.prometheus import PrometheusError, PrometheusReader, duration_seconds
from pgtop_ha.collect.tls import context_maker
from pgtop_ha.errors import UserError
from pgtop_ha.judge.fleet import FleetRow, history_events
from pgtop_ha.models.event import Event
from pgtop_ha.models.text import clean, fit
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.models.urls import redact
from pgtop_ha.runtime import run_app, run_built, settle_heap
from pgtop_ha.settings import Settings, load_settings

MAX_STEPS = 2000  # range-query points per series (Prometheus refuses more than 11,000)


def prometheus_url(settings: Settings, given: str | None) -> str:
    """The Prometheus base URL from the flag or fleet.prometheus; a UserError naming the fix otherwise."""
    url = given or settings.fleet.prometheus
    if not url:
        raise UserError("no Prometheus URL: give --prometheus URL or set fleet.prometheus in the config")
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--prometheus {clean(redact(url))[:100]}: give an http(s):// URL")
    return url


def match_of(text: str | None) -> str:
    """`--match '{env="prod"}'` as matchers to add to every query ('' when not given)."""
    if not text:
        return ""
    inner = text.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1].strip()
    if not inner or any(c in inner for c in "{}\n") or inner.count('"') % 2:
        raise UserError(f"--match {fit(clean(text), 100)!r}: give label matchers, e.g. '{{env=\"prod\"}}'")
    return inner


def queries_of(settings: Settings, match: str = "") -> FleetQueries:
    """The fleet's PromQL from its settings (the console's lag threshold too) and `--match`."""
    fleet = settings.fleet
    return FleetQueries(
        scope_label=fleet.scope_label,
        name_label=fleet.name_label,
        writer_backend=fleet.writer_backend,
        selector=fleet.selector,
        match=match,
        recorded_match_ok=not match,
        lag_warn_bytes=int(settings.thresholds.lag_bytes.warn),
    )


def reader_of(settings: Settings, url: str) -> PrometheusReader:
    """A GET-only reader of ``url`` with the fleet's TLS and login, refused when the host is not allowed."""
    found = settings.prometheus_login()
    login = None if found is None else Login(url, found[1], found[2], scheme=found[0])
    try:
        return PrometheusReader(
            url,
            verify=context_maker("fleet", settings.fleet),
            allowed_hosts=settings.fleet.allowed_hosts,
            login=login,
        )
    except PrometheusError as exc:
        raise UserError(str(exc)) from None


def drill_urls(settings: Settings, row: FleetRow) -> list[str]:
    """Patroni REST roots for a cluster: the config's override, else the metrics' instance labels."""
    override = settings.fleet.clusters.get(row.scope)
    if override is not None and override.patroni:
        return list(override.patroni)
    policy = HostPolicy.of(settings.patroni.allowed_hosts or settings.fleet.allowed_hosts)
    urls = []
    for instance in row.instances:
        host = instance.rsplit(":", 1)[0].strip("[]")
        if policy.refusal(host) is None:
            urls.append(f"http://{instance}")
    if not urls:
        raise UserError(
            f"cluster {row.scope}: no allowed Patroni URL in its metrics; "
            f"set [fleet.clusters.{row.scope}] patroni = [...] in the config"
        )
    return urls


def run_fleet(
    settings: Settings,
    url: str | None,
    reload_settings: Callable[[dict[str, Any]], Settings],
    match: str | None = None,
) -> int:
    """The fleet screen; Enter opens a cluster's console (read-only), leaving it returns to the fleet."""
    from pgtop_ha.ui.fleet.app import FleetApp

    base = prometheus_url(settings, url)
    queries = queries_of(settings, match_of(match))
    filter_text = ""
    while True:
        source = PrometheusFleet(reader_of(settings, base), queries, interval=settings.fleet.interval)
        app = FleetApp(source, filter_text=filter_text)
        scope = run_app(app)
        filter_text = app.filter_text
        if app.return_code not in (None, 0):
            return app.return_code or 1
        if scope is None:
            return 0
        row = next((r for r in app.rows if r.scope == scope), None)
        if row is None:
            continue
        if not row.instances and row.scope not in settings.fleet.clusters:
            # A healthy cluster's members are not read each refresh: ask for this one's now.
            row = dataclasses.replace(row, instances=_instances(settings, base, queries, row.scope))
        cluster = drill_settings(settings, row, reload_settings)
        code = run_drill(cluster)
        if code != 0:
            return code


def _instances(settings: Settings, base: str, queries: FleetQueries, scope: str) -> tuple[str, ...]:
    async def ask() -> tuple[str, ...]:
        source = PrometheusFleet(reader_of(settings, base), queries)
        try:
            return await source.instances(scope)
        except PrometheusError as exc:
            raise UserError(str(exc)) from None
        finally:
            await source.aclose()

    return asyncio.run(ask())


def drill_settings(
    settings: Settings, row: FleetRow, reload_settings: Callable[[dict[str, Any]], Settings]
) -> Settings:
    """A read-only console's settings for one cluster: its own config file if set, else the fleet's."""
    override = settings.fleet.clusters.get(row.scope)
    extra: dict[str, Any] = {"cluster_name": row.scope, "read_only": True}
    if override is not None and override.config is not None:
        if override.patroni:
            extra["patroni"] = {"urls": list(override.patroni)}
        return load_settings(override.config, extra)
    return reload_settings({**extra, "patroni": {"urls": drill_urls(settings, row)}})


def run_drill(settings: Settings) -> int:
    """One cluster's live console, read-only; Esc on its overview (or q) goes back to the fleet."""
    from pgtop_ha.console import build_poller
    from pgtop_ha.crash import crash_line
    from pgtop_ha.models.sections import Mode
    from pgtop_ha.ui.fleet.drill import DrillApp

    mode = Mode(read_only=True, reason="opened from the fleet view (read-only)", short="fleet")
    source = build_poller(settings, operator=False)

    async def build() -> DrillApp:
        source.prime()  # the first cycle waits on the servers while Textual builds the screen
        return DrillApp(sections=settings.console(), source=source, mode=mode, settle=settle_heap)

    app = run_built(build)
    if app.crash is not None:
        print(crash_line(app.crash, app.crash_report), file=sys.stderr)
        return 1
    return 0


# -- history --------------------------------------------------------------------------------------


def _matcher(label: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{label}="{escaped}"'


async def fleet_history(
    reader: PrometheusReader, queries: FleetQueries, scope: str, since_s: float, end: float
) -> list[Event]:
    """Leader changes, timeline bumps and member outages of ``scope`` over the last ``since_s``."""
    start = end - since_s
    step = max(1.0, since_s / MAX_STEPS)
    sel = ",".join(p for p in (_matcher(queries.scope_label, scope), queries.selector) if p)
    try:
        primary, timeline, running = await asyncio.gather(
            reader.query_range(f"patroni_primary{{{sel}}}", start, end, step),
            reader.query_range(f"patroni_postgres_timeline{{{sel}}}", start, end, step),
            reader.query_range(f"patroni_postgres_running{{{sel}}}", start, end, step),
        )
    finally:
        await reader.aclose()
    # Prometheus aligns range points on start + k·step: the same grid read back here.
    steps = [start + k * step for k in range(int(since_s / step) + 1)]
    return history_events(primary, timeline, running, steps=steps, name_label=queries.name_label)


def run_history(settings: Settings, url: str | None, scope: str, since: str, *, as_json: bool) -> int:
    """`pgtop-ha events --prometheus URL --scope NAME --since 6h`."""
    from pgtop_ha.record.report import format_events

    seconds = duration_seconds(since)
    if not seconds:
        raise UserError(f"--since {clean(since)[:40]}: give a duration such as 30m, 6h or 2d")
    base = prometheus_url(settings, url)
    try:
        events = asyncio.run(
            fleet_history(reader_of(settings, base), queries_of(settings), scope, seconds, time.time())
        )
    except PrometheusError as exc:
        raise UserError(str(exc)) from None
    rows = [e.model_dump(mode="json") for e in events]
    if as_json:
        import json

        print(json.dumps({"scope": scope, "since_s": seconds, "events": rows}, indent=2))
        return 0
    print(f"{clean(scope)} from {clean(redact(base))}, last {clean(since)}")
    print(format_events(rows))
    return 0


def run_rules(settings: Settings, output: Path | None, *, standalone_alerts: bool = False) -> int:
    """`pgtop-ha fleet rules [--output FILE] [--standalone-alerts]`: the fleet's rules for Prometheus."""
    from pgtop_ha import __version__
    from pgtop_ha.judge.fleet_rules import rule_file

    try:
        text = rule_file(
            queries_of(settings),
            __version__,
            standalone_alerts=standalone_alerts,
            alert_for=settings.fleet.alert_for,
        )
    except ValueError as exc:
        raise UserError(f"[fleet] alert_for: {exc}") from None
    if output is None:
        sys.stdout.write(text)
        return 0
    partial = output.with_name(f".{output.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(output)  # whole or not at all: a Prometheus reloading it never reads half
    except OSError as exc:
        raise UserError(f"--output {output}: {exc.strerror or exc}; give a writable path") from None
    print(f"pgtop-ha: wrote {output}; check it with `promtool check rules {output}`", file=sys.stderr)
    return 0
