"""UI tests show local times: pin the zone so screens and SVG snapshots are the same everywhere."""

from __future__ import annotations

import os
import time

os.environ["TZ"] = "UTC"
time.tzset()
os.environ.pop("NO_COLOR", None)
