"""The local sandbox cluster: etcd, Patroni-run PostgreSQL (three nodes by default), HAProxy, pgBackRest."""
