"""Which hosts the console may talk to: allowed-host lists and the addresses never contacted.

Pure (no DNS, no I/O): a host name is matched as a name, an address against CIDRs. Link-local
and cloud metadata addresses are refused whatever the lists say, so a hostile /cluster can't
send the console (and a password) there.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Never contacted: link-local (cloud metadata lives at 169.254.169.254) and the unspecified address.
_NEVER = (
    ipaddress.ip_network("169.254.0.0/16"),
    ipaddress.ip_network("fe80::/10"),
    ipaddress.ip_network("0.0.0.0/32"),
    ipaddress.ip_network("::/128"),
    ipaddress.ip_network("fd00:ec2::254/128"),  # AWS IMDS over IPv6
)
_NEVER_NAMES = frozenset(
    {"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
)
_HOSTNAME = re.compile(r"^(?=.{1,253}$)(\*\.)?([A-Za-z0-9_]([A-Za-z0-9_\-]{0,61}[A-Za-z0-9_])?\.?)+$")


def _address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def never_contacted(host: str) -> str | None:
    """Why ``host`` is never contacted (link-local, metadata), or None when it may be."""
    addr = _address(host)
    if addr is not None:
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        for net in _NEVER:
            if addr.version == net.version and addr in net:
                return f"{host} is a link-local or metadata address"
        return None
    if host.lower().rstrip(".") in _NEVER_NAMES:
        return f"{host} is a cloud metadata host name"
    return None


def check_host_pattern(value: str) -> str:
    """An allowed-hosts entry: a CIDR, an address or a host name (``*.example.com`` allowed)."""
    text = value.strip()
    if not text:
        raise ValueError("an empty entry; give a CIDR like 10.0.0.0/24 or a host name")
    if "/" in text or _address(text) is not None:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(f"{value!r} is not a valid CIDR; write it like 10.0.0.0/24") from None
        return text
    if re.fullmatch(r"[0-9.]+", text):
        raise ValueError(f"{value!r} is not a valid IP address; write it like 10.0.0.5 or 10.0.0.0/24")
    if not _HOSTNAME.match(text):
        raise ValueError(f"{value!r} is neither a CIDR nor a host name; write 10.0.0.0/24 or db1.example.com")
    return text.lower().rstrip(".")


@dataclass(frozen=True)
class HostPolicy:
    """Where connections may go: every host, or only those matching ``allowed`` (CIDRs, names)."""

    allowed: tuple[str, ...] = ()

    @classmethod
    def of(cls, patterns: Iterable[str]) -> HostPolicy:
        """A policy from allowed-hosts entries (already checked by settings)."""
        return cls(tuple(patterns))

    @property
    def restricted(self) -> bool:
        """Whether a list was given (else every host but the never-contacted ones is allowed)."""
        return bool(self.allowed)

    def refusal(self, host: str | None) -> str | None:
        """Why a connection to ``host`` is refused, or None when it may go ahead."""
        if not host:
            return "no host"
        never = never_contacted(host)
        if never is not None:
            return f"{never}; never contacted"
        if not self.allowed:
            return None
        if self._matches(host):
            return None
        return f"{host} is not in allowed_hosts"

    def _matches(self, host: str) -> bool:
        addr = _address(host)
        name = host.lower().rstrip(".")
        for pattern in self.allowed:
            if "/" in pattern or _address(pattern) is not None:
                if addr is None:
                    continue
                net = ipaddress.ip_network(pattern, strict=False)
                if addr.version == net.version and addr in net:
                    return True
            elif pattern.startswith("*."):
                if name.endswith(pattern[1:]):
                    return True
            elif name == pattern:
                return True
        return False
