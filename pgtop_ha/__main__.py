"""Run pgtop-ha with ``python -m pgtop_ha``."""

from pgtop_ha.entry import main

raise SystemExit(main())
