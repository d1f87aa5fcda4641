"""The operator screen and its modals: the only UI that can change a cluster (via actions/)."""
