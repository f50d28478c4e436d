"""normalize_url: one spelling per URL, the one `http` sends and constraints are matched on."""

from __future__ import annotations

import pytest

from agentapps.errors import UsageError
from agentapps.net.urls import normalize_url

CASES = [
    ("https://example.com/a", "https://example.com/a"),
    ("HTTPS://EXAMPLE.COM/a", "https://example.com/a"),
    ("https://example.com.:443/a", "https://example.com/a"),
    ("http://example.com:80", "http://example.com/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("https://user:pw@example.com/a", "https://example.com/a"),
    ("https://example.com@evil.test/a", "https://evil.test/a"),
    ("https://example.com/a/./b/../c", "https://example.com/a/c"),
    ("https://example.com/a/%2e%2e/%2E%2E/x", "https://example.com/x"),
    ("https://example.com/../../etc", "https://example.com/etc"),
    ("https://example.com/%7euser/%41", "https://example.com/~user/A"),
    ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
    ("https://example.com/a?q=1#frag", "https://example.com/a?q=1"),
    ("https://example.com/caf\u00e9", "https://example.com/caf%C3%A9"),
    ("https://b\u00fccher.example/", "https://xn--bcher-kva.example/"),
    ("https://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/", "https://example.com/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://[0:0::1]:80/", "http://[::1]/"),
]


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_every_spelling_of_a_url_normalises_to_the_one_sent(url: str, expected: str) -> None:
    assert normalize_url(url) == expected
    assert normalize_url(expected) == expected  # idempotent


@pytest.mark.parametrize("url", ["ftp://example.com/", "//example.com/", "http:///x", "https://example.com/a b",
                                 "https://example.com/a\r\nX: 1", "http://example.com:99999/"])
def test_what_is_not_a_plain_http_url_is_bad_input(url: str) -> None:
    with pytest.raises(UsageError):
        normalize_url(url)
