"""The judge: every rule that turns readings (models/) into a verdict. Pure, no I/O."""
