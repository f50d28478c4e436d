"""Which IP addresses outbound HTTP may reach: public ones, plus an explicit allowlist."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import cast

from agentapps.errors import ConfigError, DeniedError, SkillError

ALLOW_ENV = "AGENTAPPS_HTTP_ALLOW"

IPAddress = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network
SockAddr = tuple[str, int] | tuple[str, int, int, int]

# Spelled out rather than trusting ip.is_global alone: its tables differ between Python
# versions (3.11 calls 224.0.0.1 and 192.0.0.9 global).
_V4_REFUSED = tuple(
    IPv4Network(net)
    for net in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )
)  # fmt: skip
_V6_GLOBAL_UNICAST = IPv6Network("2000::/3")
_V6_REFUSED = tuple(
    IPv6Network(net)
    for net in (
        "2001::/23",  # IETF protocol assignments, incl. Teredo 2001::/32 and benchmarking
        "2001:db8::/32", "3fff::/20",  # documentation
        "5f00::/16",  # SRv6 SIDs
    )
)  # fmt: skip
_NAT64 = IPv6Network("64:ff9b::/96")
_HOSTNAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")


def _embedded_v4(ip: IPv6Address) -> IPv4Address | None:
    """The IPv4 address a v6 address stands for (mapped, NAT64, 6to4), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def is_public(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses; every special range is refused."""
    if isinstance(ip, IPv4Address):
        return ip.is_global and not any(ip in net for net in _V4_REFUSED)
    embedded = _embedded_v4(ip)
    if embedded is not None:
        return is_public(embedded)
    return (
        ip in _V6_GLOBAL_UNICAST  # excludes ::, ::1, v4-compatible, fc00::/7, fe80::/10, ff00::/8
        and ip.is_global
        and not any(ip in net for net in _V6_REFUSED)
    )


def _parse_ip(text: str) -> IPAddress:
    return ip_address(text.split("%", 1)[0])  # drop an IPv6 zone such as fe80::1%eth0


class HostPolicy:
    """Decides which resolved addresses a request may connect to.

    `allow` lists hostnames (every address they resolve to is trusted) and IPs or CIDRs,
    separated by commas or spaces; it is the only way to reach a non-public address.
    """

    def __init__(self, allow: str = "") -> None:
        hosts: set[str] = set()
        networks: list[Network] = []
        for token in re.split(r"[\s,]+", allow.strip().lower()):
            if not token:
                continue
            try:
                networks.append(ip_network(token.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = token.rstrip(".")
            if not _HOSTNAME.match(name):
                raise ConfigError(
                    f"{ALLOW_ENV}: {token!r} is neither a hostname nor an IP/CIDR; "
                    "use e.g. 'api.internal, 10.0.0.0/8'."
                )
            hosts.add(name)
        self.hosts = frozenset(hosts)
        self.networks = tuple(networks)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HostPolicy:
        env = os.environ if environ is None else environ
        return cls(env.get(ALLOW_ENV, ""))

    def allows(self, host: str, ip: IPAddress) -> bool:
        if _normalize_host(host) in self.hosts or is_public(ip):
            return True
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(c in net for c in candidates for net in self.networks)

    def check(self, host: str, port: int) -> list[tuple[int, SockAddr]]:
        """Resolve `host` once; return its (family, sockaddr) pairs if every one is allowed."""
        if not host:
            raise DeniedError("Refusing a request with no host.")
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise SkillError(f"Cannot resolve host {host!r}: {exc}.") from None
        resolved: list[tuple[int, SockAddr]] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = _parse_ip(str(sockaddr[0]))
            if not self.allows(host, ip):
                raise DeniedError(
                    f"Refusing {host!r}: it resolves to {ip}, which is not a public address; "
                    f"add the host or a CIDR to {ALLOW_ENV} to allow it."
                )
            pair = (int(family), cast(SockAddr, sockaddr))  # AF_INET/AF_INET6: (host, port, ...)
            if pair not in resolved:
                resolved.append(pair)
        if not resolved:
            raise SkillError(f"Host {host!r} has no IPv4 or IPv6 address.")
        return resolved


def _normalize_host(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")
