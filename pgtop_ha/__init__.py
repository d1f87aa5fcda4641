"""pgtop-ha: a terminal console for PostgreSQL HA clusters run by Patroni behind HAProxy."""

__version__ = "0.1.0"
