"""The judge as the console reads it: marks and problems per subject, the forecast, the facts they stand on.

ui/ imports the judge through this module and judge.rules alone (pyproject's import contracts).
"""

from __future__ import annotations

from pgtop_ha.judge.backup import backup_marks, no_stanza_marks, no_stanza_text, primary_archiver, push_queue
from pgtop_ha.judge.cache import after_failover, relation_share, used_share
from pgtop_ha.judge.certs import cert_days_left, member_certs
from pgtop_ha.judge.eligibility import Candidate, TakeoverPlan, find_leader, takeover_plan
from pgtop_ha.judge.fleet import FleetCounts, FleetPage, FleetRow, matches
from pgtop_ha.judge.forecast import forecast, forecast_marks
from pgtop_ha.judge.memory import hugepages_marks
from pgtop_ha.judge.poolers import (
    Finding,
    bouncer_findings,
    database_finding,
    missing_primary,
    node_finding,
    pgpool_findings,
    pool_finding,
)
from pgtop_ha.judge.probes import probe_mark
from pgtop_ha.judge.problems import Problem, banner_notes, cluster_problems, member_problems, patroni_view
from pgtop_ha.judge.replication import (
    receiver_findings,
    receiver_status,
    standby_name,
    unreported,
    walsender_marks,
)
from pgtop_ha.judge.routing import pool_mark, server_mark
from pgtop_ha.judge.sessions import session_marks
from pgtop_ha.judge.slots import absent_slot_level, failover_copy_ready, slot_marks, top_retainer, worst_slot
from pgtop_ha.judge.sources import node_freshness, stalled_after
from pgtop_ha.judge.wal import archive_failing, archiver_marks, horizon_level, wal_disk_bound, wal_disk_level

__all__ = [
    "Candidate",
    "Finding",
    "FleetCounts",
    "FleetPage",
    "FleetRow",
    "Problem",
    "TakeoverPlan",
    "absent_slot_level",
    "after_failover",
    "archive_failing",
    "archiver_marks",
    "backup_marks",
    "banner_notes",
    "bouncer_findings",
    "cert_days_left",
    "cluster_problems",
    "database_finding",
    "failover_copy_ready",
    "find_leader",
    "forecast",
    "forecast_marks",
    "horizon_level",
    "hugepages_marks",
    "matches",
    "member_certs",
    "member_problems",
    "missing_primary",
    "no_stanza_marks",
    "no_stanza_text",
    "node_finding",
    "node_freshness",
    "patroni_view",
    "pgpool_findings",
    "pool_finding",
    "pool_mark",
    "primary_archiver",
    "probe_mark",
    "push_queue",
    "receiver_findings",
    "receiver_status",
    "relation_share",
    "server_mark",
    "session_marks",
    "slot_marks",
    "stalled_after",
    "standby_name",
    "takeover_plan",
    "top_retainer",
    "unreported",
    "used_share",
    "wal_disk_bound",
    "wal_disk_level",
    "walsender_marks",
    "worst_slot",
]
