"""Engines that judge over time: the timeline of checks, the events, the failover stopwatch. No I/O."""
