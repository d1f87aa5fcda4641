"""The console's screens: monitor, help and the node filter prompt."""
