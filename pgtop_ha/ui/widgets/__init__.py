"""Widgets of the console that are not panes' pure parts."""
