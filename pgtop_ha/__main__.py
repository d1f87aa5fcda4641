"""Run pgtop-ha with ``python -m pgtop_ha``."""

from pgtop_ha.cli import main

raise SystemExit(main())
