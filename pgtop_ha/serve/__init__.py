"""One poller, many viewers: `serve` polls and records, `attach` and the browser view watch it."""
