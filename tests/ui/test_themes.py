"""Where themes come from: package data (a wheel), the checkout's themes/, and the user's own directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtop_ha.errors import ConfigError
from pgtop_ha.ui import themes

CHECKOUT_THEMES = Path(__file__).resolve().parents[2] / "themes"
RED = '[colors]\nprimary = "#ff0000"\n'


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    directory = tmp_path / "config" / "pgtop-ha" / "themes"
    directory.mkdir(parents=True)
    return directory


def test_a_checkout_reads_the_top_level_themes_folder() -> None:
    # In a checkout (and the editable install) there is no pgtop_ha/_themes: themes/ is the one source.
    assert themes.builtin_theme_dir() == CHECKOUT_THEMES
    assert {p.stem for p in CHECKOUT_THEMES.glob("*.toml")} <= set(themes.available())


def test_an_installed_package_reads_its_own_theme_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_dir: Path
) -> None:
    # What a wheel holds: pgtop_ha/_themes/*.toml beside the modules, found through importlib.resources.
    package = tmp_path / "site-packages" / "pgtop_ha"
    (package / "_themes").mkdir(parents=True)
    (package / "_themes" / "packaged.toml").write_text(RED)
    monkeypatch.setattr(themes, "files", lambda name: package)
    assert themes.builtin_theme_dir() == package / "_themes"
    assert themes.available() == ["packaged"]
    assert themes.load_theme("packaged").theme.primary == "#ff0000"


def test_the_user_theme_of_the_same_name_wins(user_dir: Path) -> None:
    assert themes.user_theme_dir() == user_dir
    assert themes.load_theme("dark").theme.primary != "#ff0000"
    (user_dir / "dark.toml").write_text("dark = true\n" + RED)
    (user_dir / "mine.toml").write_text(RED)
    (user_dir / "notes.txt").write_text("not a theme")
    assert themes.load_theme("dark").theme.primary == "#ff0000"
    assert {"dark", "light", "mono", "mine"} == set(themes.available())


def test_the_user_directory_defaults_to_dot_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert themes.user_theme_dir() == tmp_path / ".config" / "pgtop-ha" / "themes"


@pytest.mark.parametrize("text", ["[colors\n", "[colors]\nsecondary = '#fff'\n", RED + "x" * 300_000])
def test_a_bad_user_theme_is_one_line_naming_the_file(user_dir: Path, text: str) -> None:
    bad = user_dir / "dark.toml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as err:
        themes.load_theme("dark")
    assert "\n" not in str(err.value)
    assert str(bad) in str(err.value)
