"""The judge as the console reads it: a snapshot's judgement, and the facts its panes show beside it.

ui/ imports the judge through this module and judge.rules alone (pyproject's import contracts), and
grades nothing itself: every level it shows comes from a `Judgement`.
"""

from __future__ import annotations

from pgtop_ha.judge.backup import no_stanza_text, primary_archiver, push_queue
from pgtop_ha.judge.cache import after_failover, relation_share, used_share
from pgtop_ha.judge.certs import cert_days_left, member_certs
from pgtop_ha.judge.eligibility import Candidate, TakeoverPlan, find_leader, takeover_plan
from pgtop_ha.judge.fleet import FleetCounts, FleetPage, FleetRow, matches
from pgtop_ha.judge.judgement import Judgement, judgement
from pgtop_ha.judge.problems import banner_notes
from pgtop_ha.judge.replication import receiver_status, standby_name, unreported
from pgtop_ha.judge.slots import failover_copy_ready, top_retainer
from pgtop_ha.judge.sources import node_freshness, stalled_after
from pgtop_ha.judge.wal import archive_failing, wal_disk_bound

__all__ = [
    "Candidate",
    "FleetCounts",
    "FleetPage",
    "FleetRow",
    "Judgement",
    "TakeoverPlan",
    "after_failover",
    "archive_failing",
    "banner_notes",
    "cert_days_left",
    "failover_copy_ready",
    "find_leader",
    "judgement",
    "matches",
    "member_certs",
    "no_stanza_text",
    "node_freshness",
    "primary_archiver",
    "push_queue",
    "receiver_status",
    "relation_share",
    "stalled_after",
    "standby_name",
    "takeover_plan",
    "top_retainer",
    "unreported",
    "used_share",
    "wal_disk_bound",
]
