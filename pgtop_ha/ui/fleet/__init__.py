"""The fleet view: many Patroni clusters read through Prometheus."""
