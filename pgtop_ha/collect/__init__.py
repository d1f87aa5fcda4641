"""The read path: readers for Patroni, PostgreSQL, HAProxy and /proc, and the poller joining them."""
