"""The local sandbox cluster: etcd, three Patroni-managed PostgreSQL nodes, HAProxy, pgBackRest."""
