"""The Textual console: app, screens, panes and themes."""
