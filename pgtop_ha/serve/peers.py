"""Who a viewer is: its uid over the unix socket, the name of its token over TCP.

Over TCP a viewer's first line must carry a token the serve knows, before it gets a byte. The
serve writes its own token into a 0600 file beside its socket; ``--tokens FILE`` names several.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.serve.address import Address, default_socket

TOKEN_SUFFIX = ".token"  # noqa: S105  (a file name, not a secret)
MIN_TOKEN_CHARS = 16
MAX_TOKENS = 256
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,40}")
_TOKEN = re.compile(rf"[A-Za-z0-9_.~+/=-]{{{MIN_TOKEN_CHARS},200}}")


@dataclass(frozen=True)
class Token:
    """A secret a TCP viewer proves itself with, and the name its markers carry."""

    name: str
    secret: str


def token_path(socket_path: Path) -> Path:
    """Where the serve writes its TCP token: beside its socket (``serve.sock`` → ``serve.token``)."""
    return socket_path.with_name(socket_path.stem + TOKEN_SUFFIX)


def user_name(uid: int) -> str:
    """The login name of ``uid``, else ``uid N``."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _check_private(path: Path, what: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{what} {path}: no such file; create it (mode 0600) or give another") from None
    except OSError as exc:
        raise UserError(f"{what} {path}: {exc.strerror}; give a file you can read") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{what} {path} is not a regular file; give a file of tokens")
    if st.st_mode & 0o077:
        raise UserError(
            f"{what} {path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}); chmod 600 it"
        )
    if st.st_uid != os.getuid():
        raise UserError(f"{what} {path} belongs to uid {st.st_uid}, not you; use a file of your own")
    return st


def read_tokens(path: Path) -> tuple[Token, ...]:
    """``--tokens FILE``: lines of ``NAME TOKEN`` (``#`` comments); UserError naming the bad line."""
    _check_private(path, "--tokens")
    text = path.read_text(encoding="utf-8", errors="replace")
    tokens: dict[str, Token] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or not _NAME.fullmatch(parts[0]) or not _TOKEN.fullmatch(parts[1]):
            raise UserError(
                f"--tokens {path} line {number}: write NAME TOKEN (a name of letters, digits, _.@-; "
                f"a token of {MIN_TOKEN_CHARS} to 200 characters, e.g. from `openssl rand -base64 24`)"
            )
        if parts[1] in tokens:
            raise UserError(f"--tokens {path} line {number}: that token is given twice; give each its own")
        tokens[parts[1]] = Token(parts[0], parts[1])
        if len(tokens) > MAX_TOKENS:
            raise UserError(f"--tokens {path}: more than {MAX_TOKENS} tokens; keep one per person")
    if not tokens:
        raise UserError(f"--tokens {path}: no NAME TOKEN line; add one")
    return tuple(tokens.values())


def new_token(name: str) -> Token:
    """A fresh random token for the serve's own user."""
    return Token(name, secrets.token_urlsafe(32))


def write_token(path: Path, token: Token) -> None:
    """The serve's token, in a file only its user can read (never following a symlink)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{path} exists and is not a file; remove it or give --socket another path")
        os.unlink(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise UserError(
            f"{path}: {exc.strerror}; give --socket a path in a directory you can write"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(f"{token.name} {token.secret}\n")


def load_token(path: Path) -> str:
    """`attach --token-file`: the token in a file of ``NAME TOKEN`` (or ``TOKEN``) lines, the first."""
    _check_private(path, "--token-file")
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            secret = line.split()[-1]
            if _TOKEN.fullmatch(secret):
                return secret
            break
    raise UserError(f"--token-file {path}: no token in it; give the file serve wrote beside its socket")


def match(tokens: tuple[Token, ...], offered: object) -> Token | None:
    """The token ``offered`` proves, compared in constant time against every one."""
    if not isinstance(offered, str) or len(offered) > 256:
        return None
    found = None
    for token in tokens:
        if secrets.compare_digest(token.secret.encode(), offered.encode()):
            found = token
    return found


def tcp_token(address: Address, token_file: Path | None) -> str | None:
    """`attach`'s token over TCP: from ``--token-file``, else the one beside the default socket."""
    if address.path is not None:
        if token_file is not None:
            raise UserError("--token-file is for attach HOST:PORT; a socket needs none")
        return None
    path = token_file or token_path(default_socket())
    if token_file is None and not path.exists():
        raise UserError(
            f"attach {address} needs the serve's token: give --token-file FILE (serve names it at start)"
        )
    return load_token(path)
