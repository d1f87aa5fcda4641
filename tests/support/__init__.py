"""Helpers shared by the tests (clocks, scripted snapshot sources); never shipped in the package."""
