"""A real Prometheus holding N synthetic Patroni clusters (backfilled by promtool): the fleet at scale.

Three members a cluster, as Patroni's /metrics and HAProxy's exporter report them, with chosen
faults, seen for a 15-minute lookback (a bench waits for the rules to settle, then reads live); the
DCS is "last seen" in the future, so no cluster turns stale meanwhile.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from pgtop_ha import __version__
from pgtop_ha.errors import UserError
from pgtop_ha.judge.fleet import HOURLY_EVERY_S, RULES, RULES_VERSION, FleetSeries
from pgtop_ha.judge.fleet_rules import RULES_FILE, rule_file
from pgtop_ha.judge.rules import (
    LEADER_NONE,
    LEADER_SEVERAL,
    PATRONI_DCS_STALE,
    PATRONI_MEMBER_DOWN,
    PATRONI_NOT_STREAMING,
    PATRONI_PAUSED,
    PATRONI_PENDING_RESTART,
    PATRONI_SWITCHED,
    REPLICATION_LAG,
    ROUTING_WRITER_POOL,
)
from pgtop_ha.lab import procs, victoria

FAULTS = tuple(RULES)  # one synthetic cluster per rule the fleet grades by
MEMBERS = ("node1", "node2", "node3")
LOOKBACK_S = 900.0  # samples older than this are not seen at "now" (Prometheus's default: 300)
FRESH_S = LOOKBACK_S
INTERVAL_S = 5  # the scrape and rule evaluation interval, as the lab's


def scope_of(i: int) -> str:
    """The ``i``th synthetic cluster's scope."""
    return f"pg-{i:05d}"


def member_labels(i: int, m: int) -> str:
    """The labels of the ``i``th cluster's ``m``th member's series, as Prometheus text writes them."""
    return f'scope="{scope_of(i)}",name="{MEMBERS[m]}",instance="127.0.0.{1 + i % 250}:{8008 + m}"'


def writer_series(i: int) -> str:
    """The ``i``th cluster's HAProxy writer backend series (its active servers), as Prometheus text."""
    return f'haproxy_backend_active_servers{{proxy="pg_writer",scope="{scope_of(i)}"}}'


def _lines(i: int, fault: str | None, times: tuple[float, float, float]) -> Iterator[str]:
    old, _, _ = times
    for m in range(len(MEMBERS)):
        labels = member_labels(i, m)
        primary = (m == 0 and fault != LEADER_NONE.id) or (m == 1 and fault == LEADER_SEVERAL.id)
        for t in times:
            if fault == PATRONI_MEMBER_DOWN.id and m == 2 and t != old:
                continue  # its Patroni stopped answering: no sample since
            tl = 2 if fault == PATRONI_SWITCHED.id and t == old else 3
            values = {
                "patroni_postgres_running": 1,
                "patroni_primary": int(primary),
                "patroni_postgres_streaming": int(
                    not primary and not (fault == PATRONI_NOT_STREAMING.id and m == 2)
                ),
                "patroni_xlog_location": 5_000_000_000 if primary else 0,
                "patroni_xlog_replayed_location": 0
                if primary
                else 5_000_000_000 - (200_000_000 if fault == REPLICATION_LAG.id else 1_000),
                "patroni_postgres_timeline": tl,
                "patroni_pending_restart": int(fault == PATRONI_PENDING_RESTART.id and m == 1),
                "patroni_is_paused": int(fault == PATRONI_PAUSED.id),
                # Fresh for FRESH_S after the backfill: a bench over a large fleet runs for minutes.
                "patroni_dcs_last_seen": int(t - 400 if fault == PATRONI_DCS_STALE.id else t + FRESH_S),
            }
            for metric, value in values.items():
                yield f"{metric}{{{labels}}} {value} {t:.3f}"
    writer = writer_series(i)
    for t in times:
        yield f"{writer} {int(fault != ROUTING_WRITER_POOL.id)} {t:.3f}"


def fault_lines(writer: int, leaderless: int, at_ms: int) -> str:
    """Fresh samples, as each scrape would say them: cluster ``writer``'s writer pool has lost its
    server, no member of cluster ``leaderless`` leads (Prometheus text, stamped ``at_ms``)."""
    lines = [f"{writer_series(writer)} 0 {at_ms}"]
    lines += [f"patroni_primary{{{member_labels(leaderless, m)}}} 0 {at_ms}" for m in range(len(MEMBERS))]
    return "\n".join(lines)


def _rules_text(hourly_every_s: int, standalone_alerts: bool, alert_for: Mapping[str, int] | None) -> str:
    return rule_file(
        FleetSeries(), __version__, hourly_every_s, standalone_alerts=standalone_alerts, alert_for=alert_for
    )


def openmetrics(clusters: int, faults: Mapping[int, str], now: float) -> Iterator[str]:
    """The fleet as OpenMetrics text, one line at a time (a metric's samples need not be adjacent)."""
    times = (now - 3000.0, now - 60.0, now - 20.0)
    metrics = ("patroni_postgres_running", "patroni_primary", "patroni_postgres_streaming",
               "patroni_xlog_location", "patroni_xlog_replayed_location", "patroni_postgres_timeline",
               "patroni_pending_restart", "patroni_is_paused", "patroni_dcs_last_seen",
               "haproxy_backend_active_servers")  # fmt: skip
    for metric in metrics:
        yield f"# TYPE {metric} gauge"
    for i in range(clusters):
        yield from _lines(i, faults.get(i), times)
    yield "# EOF"


@dataclass
class _Engine:
    """An engine on 127.0.0.1:``port`` keeping its state and PIDs in ``state_dir``."""

    state_dir: Path
    port: int

    @property
    def url(self) -> str:
        """Its Prometheus-compatible query API's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def rules_url(self) -> str:
        """Where its rules run: their groups and alerts under /api/v1 (Prometheus itself)."""
        return self.url

    @property
    def _book(self) -> procs.PidBook:
        return procs.PidBook(self.state_dir / "pids.json")

    def settled(self, within_s: float) -> float:
        """Wait until its rules have settled (their version is written); the seconds it took."""

        def written() -> bool:
            answer = httpx.get(f"{self.url}/api/v1/query", params={"query": RULES_VERSION}, trust_env=False)
            return bool(answer.json()["data"]["result"])

        began = time.monotonic()
        if not procs.poll(written, within_s, interval=1.0):
            raise UserError(f"the fleet's rules did not settle within {within_s:g} s; see {self.state_dir}")
        return time.monotonic() - began


@dataclass
class SyntheticPrometheus(_Engine):
    """One Prometheus over a backfilled TSDB (its PID tracked)."""

    def up(
        self,
        clusters: int,
        faults: Mapping[int, str],
        *,
        rules: bool = False,
        interval_s: int = INTERVAL_S,
        hourly_every_s: int = HOURLY_EVERY_S,
        standalone_alerts: bool = False,
    ) -> float:
        """Backfill ``clusters`` and start Prometheus over them (``rules``: with the fleet's rules loaded,
        evaluated every ``interval_s``, the hourly group every ``hourly_every_s``; ``standalone_alerts``
        as `fleet rules --standalone-alerts`); the backfill's seconds."""
        promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
        if promtool is None or prometheus is None:
            raise UserError("promtool and prometheus not found; install Debian's `prometheus` package")
        self.down()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        data, text = self.state_dir / "data", self.state_dir / "fleet.om"
        began = time.monotonic()
        now = time.time()
        with text.open("w") as fh:
            for line in openmetrics(clusters, faults, now):
                fh.write(line + "\n")
        subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(text), str(data)],
            check=True, capture_output=True, timeout=1800,
        )  # fmt: skip
        text.unlink()
        took = time.monotonic() - began
        config = self.state_dir / "prometheus.yml"
        text_config = f"global:\n  scrape_interval: {interval_s}s\n  evaluation_interval: {interval_s}s\n"
        if rules:
            (self.state_dir / RULES_FILE).write_text(_rules_text(hourly_every_s, standalone_alerts, None))
            text_config += f"rule_files: ['{RULES_FILE}']\n"
        config.write_text(text_config)
        command = [
            prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
            f"--query.lookback-delta={LOOKBACK_S:g}s", "--query.max-samples=200000000",
        ]  # fmt: skip
        procs.start_served(
            self._book, "prometheus", command, cwd=self.state_dir, health=f"{self.url}/-/ready", timeout=300
        )
        if time.time() - now > LOOKBACK_S - 60:
            raise UserError("the backfill took too long: its samples are past Prometheus's lookback")
        return took

    def down(self) -> None:
        """Stop Prometheus (by its recorded PID) and remove the state."""
        pid = self._book.running("prometheus")
        if pid is not None:
            procs.terminate([pid])
        shutil.rmtree(self.state_dir, ignore_errors=True)


def _exposition(clusters: int, faults: Mapping[int, str], now: float) -> Iterator[bytes]:
    """The fleet as Prometheus text with millisecond timestamps (what VictoriaMetrics imports)."""
    chunk: list[str] = []
    for line in openmetrics(clusters, faults, now):
        if line.startswith("#"):
            continue
        series, value, stamp = line.rsplit(" ", 2)
        chunk.append(f"{series} {value} {int(float(stamp) * 1000)}\n")
        if len(chunk) >= 10_000:
            yield "".join(chunk).encode()
            chunk = []
    if chunk:
        yield "".join(chunk).encode()


@dataclass
class SyntheticVictoria(_Engine):
    """One VictoriaMetrics (vmalert on ``port + 1``) over an imported fleet.

    Started to read as the synthetic Prometheus does: the same lookback (a member whose samples
    stopped is down) and no latency offset (the newest samples count at once).
    """

    @property
    def rules_url(self) -> str:
        """Where its rules run: vmalert, on the next port."""
        return f"http://127.0.0.1:{self.port + 1}"

    def up(
        self,
        clusters: int,
        faults: Mapping[int, str],
        *,
        rules: bool = False,
        interval_s: int = INTERVAL_S,
        hourly_every_s: int = HOURLY_EVERY_S,
        standalone_alerts: bool = False,
        alert_for: Mapping[str, int] | None = None,
    ) -> float:
        """Import ``clusters`` and start VictoriaMetrics (``rules``: vmalert evaluating the fleet's
        rules every ``interval_s``, the hourly group every ``hourly_every_s``, and writing them back;
        ``standalone_alerts`` and ``alert_for`` as `fleet rules` takes them); the import's seconds."""
        vm, vmalert = victoria.binaries()
        self.down()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        command = victoria.victoria_command(
            vm, self.state_dir / "data", self.port,
            "-retentionPeriod=30d", f"-search.maxLookback={LOOKBACK_S:g}s",
            "-search.maxUniqueTimeseries=100000000", "-search.maxSamplesPerQuery=2000000000",
            # Live PromQL over a large fleet takes longer than the default 30 s a query.
            "-search.maxQueryDuration=600s",
        )  # fmt: skip
        procs.start_served(
            self._book, "victoria-metrics", command, cwd=self.state_dir, health=f"{self.url}/health"
        )
        began = time.monotonic()
        self.renew(clusters, faults)
        took = time.monotonic() - began
        if rules:
            path = self.state_dir / RULES_FILE
            path.write_text(_rules_text(hourly_every_s, standalone_alerts, alert_for))
            command = victoria.vmalert_command(vmalert, path, self.url, self.port + 1, interval_s)
            procs.start_served(
                self._book, "vmalert", command, cwd=self.state_dir, health=f"{self.rules_url}/health"
            )
        return took

    def renew(self, clusters: int, faults: Mapping[int, str]) -> None:
        """Import the fleet's samples, stamped now (again: a bench that runs for minutes keeps them seen)."""
        with httpx.Client(timeout=600, trust_env=False) as client:
            client.post(
                f"{self.url}/api/v1/import/prometheus", content=_exposition(clusters, faults, time.time())
            )
            client.get(f"{self.url}/internal/force_flush")

    def down(self) -> None:
        """Stop vmalert and VictoriaMetrics (by their recorded PIDs) and remove the state."""
        pids = [pid for name in ("vmalert", "victoria-metrics") if (pid := self._book.running(name))]
        if pids:
            procs.terminate(pids)
        shutil.rmtree(self.state_dir, ignore_errors=True)
