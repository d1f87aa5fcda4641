"""`pgtop-ha lab fleet up|down`: several labs on distinct port ranges, two engines scraping them."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgtop_ha import __version__
from pgtop_ha.errors import UserError
from pgtop_ha.judge.fleet import HOURLY_EVERY_S, FleetSeries
from pgtop_ha.judge.fleet_rules import RULES_FILE, rule_file
from pgtop_ha.lab import procs, victoria
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import Layout
from pgtop_ha.lab.progress import Progress

FLEET_FILE = "fleet.json"
FLEET_MARKER = ".pgtop-ha-fleet"
RANGE = 50  # ports per cluster: a lab uses base..base+40
PROMETHEUS_OFFSET = 45  # Prometheus listens in the first cluster's range, on a port no lab uses
VICTORIA_OFFSET = 46  # VictoriaMetrics; vmalert on the next port, its notifier's (none listens) after
SCRAPE_INTERVAL_S = 5
FLEET_ROWS = 1000  # the COPY table of each lab: small, a fleet is about many clusters


def default_fleet_dir() -> Path:
    """Where the fleet lives when no --state-dir is given."""
    from pgtop_ha.lab.layout import default_state_dir

    return default_state_dir().parent / "fleet"


@dataclass(frozen=True)
class Fleet:
    """A fleet's ports and paths: N labs at base + 50·i, Prometheus at base + 45, VictoriaMetrics at + 46."""

    base_port: int
    clusters: int
    state_dir: Path

    def scope(self, index: int) -> str:
        """The scope label Prometheus gives cluster ``index`` (each lab's own scope is the same)."""
        return f"lab{index + 1}"

    def layout(self, index: int) -> Layout:
        """Cluster ``index``'s lab layout."""
        return Layout(self.base_port + RANGE * index, self.state_dir / self.scope(index))

    @property
    def prometheus_port(self) -> int:
        """Prometheus's HTTP port."""
        return self.base_port + PROMETHEUS_OFFSET

    @property
    def prometheus_url(self) -> str:
        """Prometheus's base URL."""
        return f"http://127.0.0.1:{self.prometheus_port}"

    @property
    def victoria_port(self) -> int:
        """VictoriaMetrics's HTTP port (vmalert's is the next)."""
        return self.base_port + VICTORIA_OFFSET

    @property
    def victoria_url(self) -> str:
        """VictoriaMetrics's base URL: the same query API as Prometheus's."""
        return f"http://127.0.0.1:{self.victoria_port}"

    @property
    def vmalert_url(self) -> str:
        """vmalert's base URL: its rules and alerts under /api/v1."""
        return f"http://127.0.0.1:{self.victoria_port + 1}"

    @property
    def victoria_dir(self) -> Path:
        """VictoriaMetrics's scrape config, rules and data."""
        return self.state_dir / "victoria"

    @property
    def prometheus_dir(self) -> Path:
        """Prometheus's config and data."""
        return self.state_dir / "prometheus"

    @property
    def console_config(self) -> Path:
        """The fleet view's config: Prometheus, and each cluster's own console config for drill downs."""
        return self.state_dir / "pgtop-ha-fleet.toml"

    def console_config_text(self) -> str:
        """That config's text."""
        lines = ["[fleet]", f'prometheus = "{self.prometheus_url}"', ""]
        for i in range(self.clusters):
            lines += [f"[fleet.clusters.{self.scope(i)}]", f'config = "{self.layout(i).console_config}"', ""]
        return "\n".join(lines)

    def record(self) -> str:
        """The fleet file's text."""
        doc = {
            "base_port": self.base_port,
            "clusters": self.clusters,
            "prometheus": self.prometheus_url,
            "victoria_metrics": self.victoria_url,
        }
        return json.dumps(doc, indent=1) + "\n"


def saved_fleet(state_dir: Path) -> Fleet | None:
    """The fleet recorded in ``state_dir``, if any."""
    try:
        doc = json.loads((state_dir / FLEET_FILE).read_text())
        return Fleet(int(doc["base_port"]), int(doc["clusters"]), state_dir)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _targets(fleet: Fleet) -> list[str]:
    # Every lab's Patroni calls its cluster pgtop-lab; a target label ``scope`` takes precedence over
    # the scraped one (which the engine keeps as exported_scope), so each lab is its own cluster.
    lines = ["scrape_configs:", "  - job_name: patroni", "    static_configs:"]
    for i in range(fleet.clusters):
        layout = fleet.layout(i)
        targets = ", ".join(f"'127.0.0.1:{layout.rest_port(n)}'" for n in range(len(layout.names)))
        lines += [f"      - targets: [{targets}]", f"        labels: {{scope: '{fleet.scope(i)}'}}"]
    lines += ["  - job_name: haproxy", "    static_configs:"]
    for i in range(fleet.clusters):
        layout = fleet.layout(i)
        lines += [
            f"      - targets: ['127.0.0.1:{layout.stats_port}']",
            f"        labels: {{scope: '{fleet.scope(i)}'}}",
        ]
    return lines


def scrape_config(fleet: Fleet) -> str:
    """Scrape every Patroni /metrics and each HAProxy exporter, the target's scope label winning
    (VictoriaMetrics reads it as it is: -promscrape.config)."""
    return "\n".join(["global:", f"  scrape_interval: {SCRAPE_INTERVAL_S}s", *_targets(fleet)]) + "\n"


def prometheus_config(fleet: Fleet) -> str:
    """Prometheus's: the same scrapes, and the fleet's rules (`pgtop-ha fleet rules`) evaluated as often."""
    lines = [
        "global:",
        f"  scrape_interval: {SCRAPE_INTERVAL_S}s",
        f"  evaluation_interval: {SCRAPE_INTERVAL_S}s",
        # The fleet screen ranks from what the rules record.
        f"rule_files: ['{RULES_FILE}']",
        *_targets(fleet),
    ]
    return "\n".join(lines) + "\n"


class FleetLab:
    """Starts and stops a fleet: its labs (lab/cluster.py), Prometheus, VictoriaMetrics, vmalert; by PID."""

    def __init__(
        self,
        fleet: Fleet,
        out: Any = None,
        hourly_every_s: int = HOURLY_EVERY_S,
        alert_for: Mapping[str, int] | None = None,
    ) -> None:
        self.fleet = fleet
        self.hourly_every_s = hourly_every_s  # the rules' hourly group: how often it runs
        self.alert_for = dict(alert_for or {})  # alerts' `for:` by rule id, as [fleet] alert_for
        self.out = out or sys.stderr
        self.book = procs.PidBook(fleet.state_dir / "pids.json")

    def labs(self) -> list[Lab]:
        """One Lab per cluster."""
        return [Lab(self.fleet.layout(i), out=self.out) for i in range(self.fleet.clusters)]

    def up(self, rows: int = FLEET_ROWS) -> None:
        """Start every lab not yet running, then Prometheus and VictoriaMetrics; wait until they answer."""
        fleet = self.fleet
        state = fleet.state_dir
        saved = saved_fleet(state)
        if saved is not None and saved != fleet:
            raise UserError(
                f"the fleet in {state} has {saved.clusters} clusters at base port {saved.base_port}; "
                "`pgtop-ha lab fleet down` it first or give the same --clusters/--base-port"
            )
        if state.exists() and any(state.iterdir()) and not (state / FLEET_MARKER).exists():
            raise UserError(f"state dir {state} is not empty and was not made by `lab fleet`; choose another")
        progress = Progress(total=fleet.clusters + 3, out=self.out)
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(0o755)  # the lab user (as root) must traverse into each lab's directory
        (state / FLEET_MARKER).touch()
        (state / FLEET_FILE).write_text(fleet.record())
        for i, lab in enumerate(self.labs()):
            progress.step(f"cluster {fleet.scope(i)}: lab on ports {lab.layout.base_port}..")
            lab.up(rows=rows)
        progress.step(f"Prometheus on {fleet.prometheus_url} (scrape every {SCRAPE_INTERVAL_S}s)")
        self._start_prometheus(progress)
        progress.step(f"VictoriaMetrics on {fleet.victoria_url}, vmalert on {fleet.vmalert_url}")
        self._start_victoria()
        fleet.console_config.write_text(fleet.console_config_text())
        progress.done(
            f"fleet up: {fleet.clusters} clusters; view: pgtop-ha fleet --config {fleet.console_config}"
            f" [--prometheus {fleet.victoria_url}]"
        )

    def _rules(self, *, standalone_alerts: bool) -> str:
        return rule_file(
            FleetSeries(),
            __version__,
            self.hourly_every_s,
            standalone_alerts=standalone_alerts,
            alert_for=self.alert_for,
        )

    def _start_victoria(self) -> None:
        """VictoriaMetrics scraping as Prometheus does, and vmalert running the fleet's rules over it."""
        vm, vmalert = victoria.binaries()
        fleet, vdir = self.fleet, self.fleet.victoria_dir
        (vdir / "data").mkdir(parents=True, exist_ok=True)
        scrape, rules = vdir / "scrape.yml", vdir / RULES_FILE
        scrape.write_text(scrape_config(fleet))
        # vmalert sees a record at its next evaluation only: the alerts read none.
        rules.write_text(self._rules(standalone_alerts=True))
        command = victoria.victoria_command(
            vm, vdir / "data", fleet.victoria_port, f"-promscrape.config={scrape}",
            "-retentionPeriod=2d", f"-search.maxLookback={victoria.LOOKBACK}",
        )  # fmt: skip
        procs.start_served(
            self.book, "victoria-metrics", command, cwd=vdir, health=f"{fleet.victoria_url}/health"
        )
        command = victoria.vmalert_command(
            vmalert, rules, fleet.victoria_url, fleet.victoria_port + 1, SCRAPE_INTERVAL_S
        )
        procs.start_served(self.book, "vmalert", command, cwd=vdir, health=f"{fleet.vmalert_url}/health")

    def _start_prometheus(self, progress: Progress) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise UserError("prometheus not found; install Debian's `prometheus` package")
        pdir = self.fleet.prometheus_dir
        (pdir / "data").mkdir(parents=True, exist_ok=True)
        cfg = pdir / "prometheus.yml"
        (pdir / RULES_FILE).write_text(self._rules(standalone_alerts=False))
        cfg.write_text(prometheus_config(self.fleet))
        command = [
            binary,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={pdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.fleet.prometheus_port}",
            "--storage.tsdb.retention.time=2d",
        ]
        progress.note("waiting for Prometheus to be ready")
        ready = f"{self.fleet.prometheus_url}/-/ready"
        procs.start_served(self.book, "prometheus", command, cwd=pdir, health=ready, timeout=60)

    def down(self) -> None:
        """Stop the engines and every lab (by PID), then remove the fleet's state directory."""
        state = self.fleet.state_dir
        progress = Progress(total=self.fleet.clusters + 3, out=self.out)
        if not state.exists():
            progress.done(f"no fleet in {state}: nothing to do")
            return
        if not (state / FLEET_MARKER).exists():
            raise UserError(f"{state} was not made by `lab fleet`; refusing to touch it")
        progress.step("stopping Prometheus")
        if pid := self.book.running("prometheus"):
            procs.terminate([pid], grace=10)
        progress.step("stopping vmalert and VictoriaMetrics")
        pids = [pid for name in ("vmalert", "victoria-metrics") if (pid := self.book.running(name))]
        procs.terminate(pids, grace=10)
        for i, lab in enumerate(self.labs()):
            progress.step(f"cluster {self.fleet.scope(i)}: lab down")
            lab.down()
        progress.step(f"removing {state}")
        shutil.rmtree(state)
        progress.done("fleet down")


DEFAULT_BASE_PORT = 26000
DEFAULT_CLUSTERS = 3


def fleet_from(args: Any) -> Fleet:
    """The fleet from flags, else the state directory's record, else defaults."""
    state = (getattr(args, "state_dir", None) or default_fleet_dir()).absolute()
    saved = saved_fleet(state)
    base: int | None = getattr(args, "base_port", None)
    clusters: int | None = getattr(args, "clusters", None)
    if clusters is not None and not 1 <= clusters <= 20:
        raise UserError(f"--clusters {clusters}: give 1..20")
    if base is not None and not 1024 <= base <= 65000 - RANGE * (clusters or DEFAULT_CLUSTERS):
        raise UserError(f"--base-port {base} is out of range; use 1024..{65000 - RANGE * 20}")
    if saved is not None:
        return Fleet(base or saved.base_port, clusters or saved.clusters, state)
    return Fleet(base or DEFAULT_BASE_PORT, clusters or DEFAULT_CLUSTERS, state)


def run_fleet_lab(args: Any) -> int:
    """Dispatch `pgtop-ha lab fleet up|down`."""
    fleet = fleet_from(args)
    lab = FleetLab(fleet)
    if args.fleet_command == "up":
        lab.up(rows=getattr(args, "rows", None) or FLEET_ROWS)
    else:
        lab.down()
    return 0
