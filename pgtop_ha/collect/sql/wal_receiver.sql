-- pg_stat_wal_receiver: the standby's upstream.
select status, received_tli, sender_host, sender_port, slot_name, last_msg_receipt_time
from pg_stat_wal_receiver
