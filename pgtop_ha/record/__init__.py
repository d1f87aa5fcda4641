"""Recordings: snapshots, events and markers in one SQLite file; replay and reports read it back.

Nothing here imports Textual: `pgtop-ha record` runs headless, and the replay UI lives in ui/.
"""
