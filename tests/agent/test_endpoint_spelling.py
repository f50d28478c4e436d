"""AWS credentials sign requests only to an endpoint the project chose; a skill that spells the
project's endpoint another way (a trailing slash, the host's case, the default port) is the same
endpoint, and anything that could reach another server is not."""

from __future__ import annotations

import pytest

from agentapps.agent.converse import same_endpoint

PROJECT = "https://bedrock.example.com"


@pytest.mark.parametrize("spelling", [
    "https://bedrock.example.com",
    "https://bedrock.example.com/",
    "HTTPS://Bedrock.Example.COM",
    "https://bedrock.example.com:443/",
    " https://bedrock.example.com ",
])
def test_another_spelling_of_the_projects_endpoint_is_the_same(spelling):
    assert same_endpoint(spelling, PROJECT) and same_endpoint(PROJECT, spelling)


@pytest.mark.parametrize("other", [
    "http://bedrock.example.com",              # another scheme
    "https://bedrock.example.com:8443",        # another port
    "https://bedrock.example.com.evil.test",   # another host
    "https://bedrock.example.com.",            # a resolver's search domains may send it elsewhere
    "https://evil.test/bedrock.example.com",
    "https://bedrock.example.com@evil.test",   # user info: the request goes to evil.test
    "https://user@bedrock.example.com",        # user info is never normalised away
    "https://bedrock.example.com/v2",          # another path
    "https://bedrock.example.com/?x=1",        # a query
    "https://bedrock.example.com:99999",       # does not parse
    "ftp://bedrock.example.com",
    "",
])
def test_anything_that_may_reach_another_server_is_not(other):
    assert not same_endpoint(other, PROJECT) and not same_endpoint(PROJECT, other)


def test_a_url_that_does_not_parse_matches_itself_as_written():
    assert same_endpoint("https://bedrock.example.com:99999", "https://bedrock.example.com:99999")
