"""Build hook: the top-level themes/ (their one source) ship inside the package as pgtop_ha/_themes.

Everything else is in pyproject.toml. The console reads them with importlib.resources, so a wheel
installed by pip, pip --user or pipx finds them wherever it lands; a source checkout (and the
editable install) reads themes/ itself.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithThemes(build_py):
    """build_py, plus themes/*.toml copied to pgtop_ha/_themes in the build."""

    def run(self) -> None:
        """Build the package, then add the themes."""
        super().run()
        target = Path(self.build_lib) / "pgtop_ha" / "_themes"
        self.mkpath(str(target))
        for theme in sorted((Path(__file__).resolve().parent / "themes").glob("*.toml")):
            self.copy_file(str(theme), str(target / theme.name))


setup(cmdclass={"build_py": BuildWithThemes})
