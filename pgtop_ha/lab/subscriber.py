"""A plain PostgreSQL subscriber of the lab's publication: COPY progress and slot counters."""

from __future__ import annotations

import os
import shutil
import signal
import time

from pgtop_ha.errors import UserError
from pgtop_ha.lab import procs
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import (
    COPY_TABLE,
    DBNAME,
    PERMANENT_SLOT,
    PUBLICATION,
    SUBSCRIPTION,
    SUPERUSER,
)
from pgtop_ha.lab.progress import Progress
from pgtop_ha.lab.secrets import ensure

THROTTLE_EVERY = 25_000
THROTTLE_SLEEP = 0.5


def up(lab: Lab) -> str:
    """Start the subscriber and subscribe (streaming = on) through HAProxy's writer port."""
    if not lab.exists():
        raise UserError("no lab here; run `pgtop-ha lab up` first")
    tools = lab.tools()
    layout = lab.layout
    port = layout.subscriber_port
    progress = Progress(total=3, out=lab.out)
    data = layout.subscriber_data_dir
    if not lab.book.running("subscriber"):
        progress.step(f"initdb and start the subscriber on 127.0.0.1:{port}")
        if not (data / "PG_VERSION").exists():
            passwords = ensure(layout)
            pwfile = layout.run_dir / "subscriber-pw"
            lab.lab_file(pwfile, passwords[SUPERUSER] + "\n")
            lab.lab_dir(data)
            procs.run(
                [str(tools.pg_bin / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}",
                 "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8",
                 "--locale=C.UTF-8"],
                run_as=lab.run_as, timeout=120,
            )  # fmt: skip
            pwfile.unlink()
        proc = procs.spawn(
            [str(tools.pg_bin / "postgres"), "-D", str(data), "-p", str(port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={layout.run_dir}",
             "-c", "max_logical_replication_workers=4", "-c", "max_sync_workers_per_subscription=2",
             "-c", "wal_level=logical"],
            log=layout.log_dir / "subscriber.log", run_as=lab.run_as, cwd=data,
            env={"PGPASSFILE": str(layout.run_dir / "lab-pgpass"),
                 **({"LD_LIBRARY_PATH": str(tools.pg_lib)} if tools.pg_lib else {})},
        )  # fmt: skip
        lab.book.record("subscriber", proc.pid)

        def ready() -> bool:
            progress.note("waiting for the subscriber to accept connections")
            try:
                lab.psql("SELECT 1", port=port, dbname="postgres", timeout=5)
            except UserError:
                return False
            return True

        if not procs.poll(ready, 60, interval=0.5):
            raise UserError(f"subscriber did not start; see {layout.log_dir / 'subscriber.log'}")
    progress.step("creating the database and table")
    if not lab.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DBNAME}'", port=port, dbname="postgres"):
        lab.psql(f"CREATE DATABASE {DBNAME}", port=port, dbname="postgres")
    lab.psql(
        f"CREATE TABLE IF NOT EXISTS {COPY_TABLE} (id bigint PRIMARY KEY, payload text NOT NULL, "
        "created_at timestamptz NOT NULL DEFAULT now())",
        port=port,
    )
    # A throttled subscriber: the initial COPY lasts tens of seconds on any disk, long enough to
    # watch pg_stat_progress_copy on both sides (a slow subscriber or link looks the same).
    lab.psql(
        "CREATE OR REPLACE FUNCTION lab_throttle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF NEW.id % {THROTTLE_EVERY} = 0 THEN PERFORM pg_sleep({THROTTLE_SLEEP}); END IF; "
        "RETURN NEW; END $$",
        port=port,
    )
    if not lab.psql("SELECT 1 FROM pg_trigger WHERE tgname = 'lab_throttle'", port=port):
        lab.psql(
            f"CREATE TRIGGER lab_throttle BEFORE INSERT ON {COPY_TABLE} FOR EACH ROW "
            "EXECUTE FUNCTION lab_throttle()",
            port=port,
        )
        lab.psql(f"ALTER TABLE {COPY_TABLE} ENABLE ALWAYS TRIGGER lab_throttle", port=port)
    progress.step(f"CREATE SUBSCRIPTION {SUBSCRIPTION} on Patroni's permanent slot {PERMANENT_SLOT}")
    if not lab.psql(f"SELECT 1 FROM pg_subscription WHERE subname = '{SUBSCRIPTION}'", port=port):
        conninfo = f"host=127.0.0.1 port={layout.writer_port} dbname={DBNAME} user={SUPERUSER}"
        lab.psql(
            f"CREATE SUBSCRIPTION {SUBSCRIPTION} CONNECTION '{conninfo}' PUBLICATION {PUBLICATION} "
            f"WITH (create_slot = false, slot_name = '{PERMANENT_SLOT}', streaming = on)",
            port=port,
        )
    progress.done("subscriber up; the initial COPY of sync_big runs now")
    return "subscriber up"


def down(lab: Lab) -> str:
    """Drop the subscription without dropping Patroni's permanent slot, then stop the subscriber."""
    layout = lab.layout
    port = layout.subscriber_port
    pid = lab.book.running("subscriber")
    if pid:
        exists = lab.psql(f"SELECT 1 FROM pg_subscription WHERE subname = '{SUBSCRIPTION}'", port=port)
        if exists:
            # Dropping a subscription drops its slot: detach the slot first so Patroni's stays.
            lab.psql(f"ALTER SUBSCRIPTION {SUBSCRIPTION} DISABLE", port=port)
            lab.psql(f"ALTER SUBSCRIPTION {SUBSCRIPTION} SET (slot_name = NONE)", port=port)
            lab.psql(f"DROP SUBSCRIPTION {SUBSCRIPTION}", port=port)
        os.kill(pid, signal.SIGINT)  # fast shutdown
        if procs.wait_gone([pid], time.monotonic() + 30):
            os.kill(pid, signal.SIGKILL)
        lab.book.forget("subscriber")
    # Table-sync slots left by an interrupted initial COPY would retain WAL forever.
    leader = lab.leader_index()
    lab.psql(
        "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots "
        r"WHERE slot_name LIKE 'pg\_%\_sync\_%' AND NOT active",
        leader,
    )
    shutil.rmtree(layout.subscriber_data_dir, ignore_errors=True)
    return "subscriber down"
