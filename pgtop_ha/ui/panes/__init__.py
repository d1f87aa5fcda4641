"""The console's panes: each a pure rows() function plus a spec the keyed table widget renders."""
