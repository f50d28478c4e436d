"""Address table for the SSRF policy: only global unicast passes unless the allowlist says so."""

from __future__ import annotations

import socket
from ipaddress import ip_address

import pytest

from agentapps.errors import ConfigError, DeniedError
from agentapps.net.addresses import HostPolicy, is_public

# (address, expected is_public, why)
ADDRESS_TABLE = [
    ("8.8.8.8", True, "public v4"),
    ("1.1.1.1", True, "public v4"),
    ("93.184.216.34", True, "public v4"),
    ("127.0.0.1", False, "loopback"),
    ("127.255.255.254", False, "loopback /8"),
    ("10.0.0.1", False, "private 10/8"),
    ("172.16.0.1", False, "private 172.16/12"),
    ("172.31.255.255", False, "private 172.16/12 top"),
    ("172.32.0.1", True, "just outside 172.16/12"),
    ("192.168.1.1", False, "private 192.168/16"),
    ("169.254.169.254", False, "cloud metadata, link-local"),
    ("169.254.0.1", False, "link-local"),
    ("100.64.0.1", False, "CGNAT"),
    ("100.127.255.254", False, "CGNAT top"),
    ("0.0.0.0", False, "unspecified"),
    ("0.1.2.3", False, "this network 0/8"),
    ("224.0.0.1", False, "multicast"),
    ("239.255.255.250", False, "multicast SSDP"),
    ("255.255.255.255", False, "broadcast"),
    ("240.0.0.1", False, "reserved"),
    ("198.18.0.1", False, "benchmarking"),
    ("198.19.255.1", False, "benchmarking top"),
    ("192.0.2.1", False, "TEST-NET-1"),
    ("198.51.100.1", False, "TEST-NET-2"),
    ("203.0.113.1", False, "TEST-NET-3"),
    ("192.0.0.9", False, "IETF protocol assignments"),
    ("192.88.99.1", False, "6to4 relay anycast"),
    ("2606:4700:4700::1111", True, "public v6"),
    ("2001:4860:4860::8888", True, "public v6"),
    ("::1", False, "v6 loopback"),
    ("::", False, "v6 unspecified"),
    ("fe80::1", False, "v6 link-local"),
    ("fc00::1", False, "ULA"),
    ("fd12:3456::1", False, "ULA"),
    ("fec0::1", False, "site-local"),
    ("ff02::1", False, "v6 multicast"),
    ("2001:db8::1", False, "documentation"),
    ("100::1", False, "discard prefix"),
    ("::ffff:127.0.0.1", False, "v4-mapped loopback"),
    ("::ffff:7f00:1", False, "v4-mapped loopback, hex"),
    ("::ffff:169.254.169.254", False, "v4-mapped metadata"),
    ("::ffff:10.0.0.1", False, "v4-mapped private"),
    ("::ffff:8.8.8.8", True, "v4-mapped public"),
    ("::127.0.0.1", False, "v4-compatible (deprecated)"),
    ("64:ff9b::7f00:1", False, "NAT64 of loopback"),
    ("64:ff9b::a9fe:a9fe", False, "NAT64 of metadata"),
    ("64:ff9b::808:808", True, "NAT64 of public"),
    ("64:ff9b:1::a00:1", False, "local-use NAT64"),
    ("2002:7f00:1::", False, "6to4 of loopback"),
    ("2002:a9fe:a9fe::1", False, "6to4 of metadata"),
    ("2002:808:808::1", True, "6to4 of public"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False, "Teredo"),
    ("2001:2::1", False, "v6 benchmarking"),
]


@pytest.mark.parametrize(("text", "expected", "why"), [  # every address refused is one SSRF spelling
    pytest.param(*row, marks=[] if row[1] else [pytest.mark.attack("SSRF spellings")]) for row in ADDRESS_TABLE])
def test_is_public_table(text: str, expected: bool, why: str) -> None:
    assert is_public(ip_address(text)) is expected, why


def test_address_table_is_large_enough() -> None:
    assert len(ADDRESS_TABLE) >= 30


# Odd spellings go through getaddrinfo: what is checked is what the socket would connect to.
@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1", "localhost", "0177.0.0.1", "2130706433", "127.1", "0x7f.1", "0x7f000001",
        "::1", "::ffff:7f00:1", "::ffff:127.0.0.1", "0:0:0:0:0:ffff:7f00:1", "169.254.169.254",
        "0xa9fea9fe", "10.1", "0", "0.0.0.0", "192.168.1.1", "100.64.0.1", "64:ff9b::7f00:1",
        # (issue 22's attack suite: spellings the earlier rounds did not try) the metadata address
        # in octal, decimal, dotted-mixed and mapped-hex form; the SIIT-translated form; AWS's IPv6
        # and Alibaba's metadata addresses; loopback by an upper-case name, 12-digit octal, padded v6
        "0251.0376.0251.0376", "2852039166", "169.254.43518", "::ffff:a9fe:a9fe", "::ffff:0:a9fe:a9fe",
        "fd00:ec2::254", "100.100.100.200", "LOCALHOST", "017700000001", "0000::1",
    ],
)  # fmt: skip
@pytest.mark.attack("SSRF spellings")
def test_default_policy_refuses_non_public_spellings(host: str) -> None:
    with pytest.raises(DeniedError) as info:
        HostPolicy().check(host, 80)
    assert repr(host) in str(info.value)
    assert "AGENTAPPS_HTTP_ALLOW" in str(info.value)


def test_default_policy_returns_checked_sockaddr_for_public_literal() -> None:
    assert HostPolicy().check("8.8.8.8", 443) == [(socket.AF_INET, ("8.8.8.8", 443))]


def test_refusal_names_the_resolved_address() -> None:
    with pytest.raises(DeniedError, match=r"'2130706433'.*127\.0\.0\.1"):
        HostPolicy().check("2130706433", 80)


@pytest.mark.parametrize(
    ("allow", "host", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "0177.0.0.1", True),  # same address, odd spelling
        ("127.0.0.1", "::ffff:127.0.0.1", True),  # mapped form of an allowed v4
        ("127.0.0.1", "127.0.0.2", False),
        ("127.0.0.0/8", "127.0.0.2", True),
        ("10.0.0.0/8, 127.0.0.1", "10.9.8.7", True),
        ("10.0.0.0/8 127.0.0.1", "169.254.169.254", False),
        ("::1", "::1", True),
        ("[::1]", "::1", True),
        ("localhost", "localhost", True),
        ("LocalHost.", "localhost", True),
        ("localhost", "127.0.0.1", False),  # a hostname allows that name, not the address
        ("api.internal", "localhost", False),
        ("", "127.0.0.1", False),
    ],
)
def test_allowlist_host_and_cidr(allow: str, host: str, allowed: bool) -> None:
    policy = HostPolicy(allow)
    if allowed:
        assert policy.check(host, 8080)
    else:
        with pytest.raises(DeniedError):
            policy.check(host, 8080)


@pytest.mark.attack("SSRF spellings")
def test_refused_if_any_resolved_address_is_not_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def two_addresses(host: str, port: int, *args: object, **kwargs: object) -> list[object]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", two_addresses)
    with pytest.raises(DeniedError, match=r"'rebind\.example'.*10\.0\.0\.5"):
        HostPolicy().check("rebind.example", 80)


def test_from_env_reads_allowlist() -> None:
    policy = HostPolicy.from_env({"AGENTAPPS_HTTP_ALLOW": "127.0.0.1"})
    assert policy.check("127.0.0.1", 80) == [(socket.AF_INET, ("127.0.0.1", 80))]
    with pytest.raises(DeniedError):
        HostPolicy.from_env({}).check("127.0.0.1", 80)


@pytest.mark.parametrize("bad", ["http://x", "10.0.0.0/33", "a b/c", "exa mple..com", "*"])
def test_malformed_allowlist_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="AGENTAPPS_HTTP_ALLOW"):
        HostPolicy(bad)
