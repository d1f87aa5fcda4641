"""Record tests print and show local times: pin the zone so they read the same everywhere."""

from __future__ import annotations

import os
import time

os.environ["TZ"] = "UTC"
time.tzset()
