"""`pgtop-ha serve`'s flags made into addresses, tokens, limits and a browser view."""

from __future__ import annotations

import argparse
import socket as sockets
import sys

from pgtop_ha.errors import UserError
from pgtop_ha.record.limits import parse_limit
from pgtop_ha.serve.address import Address, default_socket, host_port, listen_tcp, loopback
from pgtop_ha.serve.hub import MAX_VIEWERS
from pgtop_ha.serve.peers import read_tokens
from pgtop_ha.settings import Settings

MAX_TABS = 8  # browser tabs at once: each runs an `attach` process


def run_serve_command(args: argparse.Namespace, settings: Settings) -> int:
    """Check every flag before anything starts, then serve."""
    limit = parse_limit(args.record_max)
    if args.group and args.socket is None:
        raise UserError("--group needs --socket PATH in a directory that group can enter")
    if args.tokens and not args.listen:
        raise UserError("--tokens is for TCP viewers: give --listen 127.0.0.1:PORT too")
    socket = args.socket or default_socket()
    addresses = [Address(path=socket)]
    if args.listen:
        addresses.append(listen_tcp(args.listen))
    tokens = read_tokens(args.tokens) if args.tokens else None
    web = None
    if args.web:
        host, port = host_port(args.web, "--web")
        if not loopback(host) and not args.web_host:
            raise UserError(
                f"--web {args.web} is not a loopback address: anyone who reaches it with the token "
                "watches the cluster; add --web-host if that is meant"
            )
        from pgtop_ha.serve.web import WebView

        # A wildcard address is no place a browser can go: the URL names this host instead.
        shown = sockets.getfqdn() if host in ("0.0.0.0", "::", "") else host  # noqa: S104
        web = WebView(host, port, Address(path=socket), shown=shown, max_tabs=args.max_tabs or MAX_TABS)
        if not loopback(host):
            bold, plain = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("", "")
            print(f"{bold}pgtop-ha: the browser view listens on {host}, not loopback (--web-host){plain}")
    from pgtop_ha.serve.server import run_serve

    return run_serve(
        settings,
        addresses,
        group=args.group,
        record=args.record,
        limit=limit,
        web=web,
        tokens=tokens,
        max_viewers=args.max_viewers or MAX_VIEWERS,
    )
