"""Themes as data files (themes/*.toml): Textual colours plus styles for states and badges.

Built-in themes are package data (pgtop_ha/_themes in a wheel, themes/ in a checkout); a file of the
same name in the user's themes directory wins.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from rich.style import Style
from textual.color import Color, ColorParseError
from textual.theme import Theme

from pgtop_ha.errors import ConfigError
from pgtop_ha.models.thresholds import Level

_MAX_THEME_BYTES = 256 * 1024
_COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)


@dataclass(frozen=True)
class ConsoleTheme:
    """A Textual theme plus the console's own style strings ("$name" = a theme colour)."""

    theme: Theme
    levels: dict[str, str] = field(default_factory=dict)
    badges: dict[str, str] = field(default_factory=dict)


def user_theme_dir() -> Path:
    """The user's own themes: $XDG_CONFIG_HOME/pgtop-ha/themes (default ~/.config/pgtop-ha/themes)."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pgtop-ha" / "themes"


def builtin_theme_dir() -> Traversable:
    """The themes that come with pgtop-ha: inside an installed wheel, else the checkout's themes/."""
    packaged = files("pgtop_ha") / "_themes"  # setup.py copies themes/ there in a build
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "themes"  # a source checkout or editable install


def theme_dirs() -> list[Traversable]:
    """Where theme files are looked for, first match wins: the user's own, then the built-in ones."""
    return [user_theme_dir(), builtin_theme_dir()]


def _theme_files(directory: Traversable) -> list[Traversable]:
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.name.endswith(".toml") and p.is_file()]


def available() -> list[str]:
    """Names of every theme file found."""
    return sorted({p.name.removesuffix(".toml") for d in theme_dirs() for p in _theme_files(d)})


def load_theme(name: str) -> ConsoleTheme:
    """Load ``name`` (a theme name or a path to a .toml file); bad input is a ConfigError."""
    path: Traversable = Path(name)
    if not (name.endswith(".toml") and path.is_file()):
        found = next((d / f"{name}.toml" for d in theme_dirs() if (d / f"{name}.toml").is_file()), None)
        if found is None:
            raise ConfigError(
                f"theme {name!r} not found; use one of {', '.join(available()) or 'dark'} "
                "or a path to a theme .toml file"
            )
        path = found
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX_THEME_BYTES + 1)
        if len(raw) > _MAX_THEME_BYTES:
            raise ConfigError(f"theme file {path} is larger than 256 KiB; is it really a theme?")
        data = tomllib.loads(raw.decode())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"theme file {path}: {exc}; fix or remove it") from None
    try:
        return _build(data, path)
    except ConfigError:
        raise
    except Exception as exc:  # whatever a hand-edited theme holds, one line, never a traceback
        raise ConfigError(f"theme file {path}: {type(exc).__name__}: {exc}; fix or remove it") from None


def _table(data: dict[str, Any], key: str, path: Traversable) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f'theme file {path}: [{key}] must be a table of name = "value"')
    return {str(k): str(v) for k, v in value.items()}


def _build(data: dict[str, Any], path: Traversable) -> ConsoleTheme:
    colors = data.get("colors", {})
    if not isinstance(colors, dict) or "primary" not in colors:
        raise ConfigError(f"theme file {path}: [colors] needs at least primary; add it")
    unknown = set(colors) - set(_COLOR_KEYS)
    if unknown:
        raise ConfigError(
            f"theme file {path}: unknown colour {sorted(unknown)[0]!r}; use {', '.join(_COLOR_KEYS)}"
        )
    c = {k: str(v) for k, v in colors.items()}
    for key, value in c.items():
        try:
            Color.parse(value)
        except ColorParseError:
            raise ConfigError(
                f"theme file {path}: colour {key} = {value!r} is not a colour; use e.g. #1e90ff"
            ) from None
    theme = Theme(
        name=str(data.get("name", path.name.removesuffix(".toml"))),
        primary=c["primary"],
        secondary=c.get("secondary"),
        warning=c.get("warning"),
        error=c.get("error"),
        success=c.get("success"),
        accent=c.get("accent"),
        foreground=c.get("foreground"),
        background=c.get("background"),
        surface=c.get("surface"),
        panel=c.get("panel"),
        boost=c.get("boost"),
        dark=bool(data.get("dark", True)),
        variables=_table(data, "variables", path),
    )
    return ConsoleTheme(theme=theme, levels=_table(data, "levels", path), badges=_table(data, "badges", path))


def resolve(style: str, variables: dict[str, str]) -> Style:
    """Turn 'bold $error' into a Rich Style using the theme's variables; unknown words drop."""
    words = []
    for word in style.split():
        if word.startswith("$"):
            value = variables.get(word[1:])
            if value is None:
                continue
            word = value.split()[0]  # "#ff0000 50%" -> the colour alone
        words.append(word)
    try:
        return Style.parse(" ".join(words)) if words else Style()
    except Exception:  # a bad style word in a user's theme must not stop the console
        return Style()


def level_styles(ct: ConsoleTheme, variables: dict[str, str]) -> dict[Level, Style]:
    """The Rich style of each state for this theme."""
    return {lv: resolve(ct.levels.get(lv.name.lower(), ""), variables) for lv in Level}
