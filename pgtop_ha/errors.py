"""Errors meant for the person at the keyboard: one line that names the thing and the fix."""


class UserError(Exception):
    """A problem the user can fix; its message is printed as one line, with no traceback."""

    exit_code = 2


class ConfigError(UserError):
    """Bad configuration: missing file, bad TOML, unknown key, wrong type, bad URL."""
