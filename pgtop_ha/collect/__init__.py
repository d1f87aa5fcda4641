"""The read path: readers of Patroni, PostgreSQL, HAProxy and /proc, and the poller."""
