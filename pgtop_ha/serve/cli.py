"""`pgtop-ha serve`'s flags made into addresses, a recording limit and a browser view."""

from __future__ import annotations

import argparse
import sys

from pgtop_ha.errors import UserError
from pgtop_ha.record.limits import parse_limit
from pgtop_ha.serve.address import Address, default_socket, host_port, listen_tcp, loopback
from pgtop_ha.settings import Settings


def run_serve_command(args: argparse.Namespace, settings: Settings) -> int:
    """Check every flag before anything starts, then serve."""
    limit = parse_limit(args.record_max)
    if args.group and args.socket is None:
        raise UserError("--group needs --socket PATH in a directory that group can enter")
    socket = args.socket or default_socket()
    addresses = [Address(path=socket)]
    if args.listen:
        addresses.append(listen_tcp(args.listen))
    web = None
    if args.web:
        host, port = host_port(args.web, "--web")
        if not loopback(host) and not args.web_host:
            raise UserError(
                f"--web {args.web} is not a loopback address: anyone who reaches it with the token "
                "watches the cluster; add --web-host if that is meant"
            )
        from pgtop_ha.serve.web import WebView

        web = WebView(host, port, Address(path=socket))
        if not loopback(host):
            bold, plain = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("", "")
            print(f"{bold}pgtop-ha: the browser view listens on {host}, not loopback (--web-host){plain}")
    from pgtop_ha.serve.server import run_serve

    return run_serve(settings, addresses, group=args.group, record=args.record, limit=limit, web=web)
