"""`[permissions] hosts` of plugin.toml (autocoder/plugins/hosts.py): what an entry may be, how
names are normalised, what a rule matches, and that render writes back what parse read."""

from __future__ import annotations

import pytest

from autocoder.plugins import (
    CommandDecl,
    HostRule,
    ManifestError,
    Permissions,
    PluginManifest,
    parse_host_rule,
    parse_manifest,
    permissions_from_text,
    render_manifest,
)

MANIFEST = """[plugin]
name = "chat-post"
version = "1.0.0"
summary = "Posts to the team chat."
entry = "chat_post.plugin:Plugin"

[permissions]
{permissions}

[[commands]]
name = "post"
"""


def hosts_of(line: str) -> tuple[HostRule, ...]:
    return permissions_from_text(MANIFEST.format(permissions=line)).hosts


@pytest.mark.parametrize(("entry", "rule"), [
    ("hooks.slack.com", HostRule(host="hooks.slack.com")),
    ("*.example.com", HostRule(host="example.com", wildcard=True)),
    ("api.example.com:8443", HostRule(host="api.example.com", port=8443)),
    ("http://intranet.corp", HostRule(host="intranet.corp", scheme="http")),
    ("https://api.example.com", HostRule(host="api.example.com")),
    ("api.example.com:443", HostRule(host="api.example.com")),  # the default port is no port
    ("10.0.0.5", HostRule(host="10.0.0.5")),
    ("[fd00::5]:8080", HostRule(host="fd00::5", port=8080)),
])
def test_each_form_of_an_entry(entry: str, rule: HostRule) -> None:
    assert parse_host_rule(entry) == rule
    assert hosts_of(f"hosts = [{entry!r}]".replace("'", '"')) == (rule,)


@pytest.mark.parametrize(("entry", "normalised"), [
    ("Hooks.Slack.COM", "hooks.slack.com"),
    ("hooks.slack.com.", "hooks.slack.com"),  # a trailing dot names the same host
    ("*.Example.Com.", "*.example.com"),
    ("bücher.example", "xn--bcher-kva.example"),  # IDNA
    ("HTTP://Intranet.Corp:80", "http://intranet.corp"),
    ("[::FFFF:127.0.0.1]", "[::ffff:7f00:1]"),
])
def test_names_are_normalised(entry: str, normalised: str) -> None:
    assert parse_host_rule(entry).text() == normalised
    assert parse_host_rule(normalised) == parse_host_rule(entry)


@pytest.mark.parametrize(("entry", "reason"), [
    ("https://api.example.com/v1", "without a path or query"),
    ("api.example.com?x=1", "without a path or query"),
    ("user@api.example.com", "must not contain a user name or password"),
    ("ftp://files.example.com", "the scheme 'ftp' is not allowed"),
    ("*.com", "covers too much"),
    ("api.*.example.com", "may use * only as a whole first label"),
    ("*", "may use * only as a whole first label"),
    ("*.10.0.0.1", "an IP address cannot have a *. in front"),
    ("127.1", "neither a host name nor an IPv4 address"),
    ("2130706433", "neither a host name nor an IPv4 address"),
    ("::1", "must be written in brackets"),
    ("[fe80::1%eth0]", "with a zone"),
    ("api.example.com:0", "must be a number from 1 to 65535"),
    ("api.example.com:70000", "must be a number from 1 to 65535"),
    ("api.example.com:https", "must be a number from 1 to 65535"),
    ("bad_name.example.com", "is not a valid host name"),
    ("-x.example.com", "is not a valid host name"),
    ("", "has no host"),
])
def test_a_bad_entry_is_one_sentence_in_the_manifests_words(entry: str, reason: str) -> None:
    text = MANIFEST.format(permissions=f"hosts = [{entry!r}]".replace("'", '"'))
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text)
    [error] = caught.value.errors
    assert error.startswith(f"plugin.toml: [permissions] hosts entry {entry!r}: ")
    assert reason in error


def test_hosts_must_be_a_list_of_strings() -> None:
    for line, error in [
        ('hosts = "hooks.slack.com"', "plugin.toml: [permissions] hosts must be a list of"
                                      " strings, like [\"hooks.slack.com\"]"),
        ("hosts = [1]", "plugin.toml: [permissions] hosts entries must be strings (got 1)"),
    ]:
        with pytest.raises(ManifestError) as caught:
            permissions_from_text(MANIFEST.format(permissions=line))
        assert caught.value.errors == [error]


def test_every_bad_entry_is_reported_and_duplicates_are_one_rule() -> None:
    with pytest.raises(ManifestError) as caught:
        permissions_from_text(MANIFEST.format(permissions='hosts = ["a/b", "*.com", "ok.org"]'))
    assert len(caught.value.errors) == 2
    assert hosts_of('hosts = ["A.org", "a.org.", "a.org:443"]') == (HostRule(host="a.org"),)


@pytest.mark.parametrize(("rule", "scheme", "host", "port", "expected"), [
    ("hooks.slack.com", "https", "hooks.slack.com", None, True),
    ("hooks.slack.com", "https", "HOOKS.slack.com.", 443, True),
    ("hooks.slack.com", "http", "hooks.slack.com", None, False),  # http only when declared
    ("hooks.slack.com", "https", "hooks.slack.com", 8443, False),
    ("hooks.slack.com", "https", "evil-hooks.slack.com", None, False),
    ("hooks.slack.com", "https", "hooks.slack.com.evil.org", None, False),
    ("*.example.com", "https", "a.example.com", None, True),
    ("*.example.com", "https", "a.b.example.com", None, True),
    ("*.example.com", "https", "example.com", None, False),  # sub-domains only
    ("*.example.com", "https", "badexample.com", None, False),
    ("api.example.com:8443", "https", "api.example.com", 8443, True),
    ("api.example.com:8443", "https", "api.example.com", None, False),
    ("http://intranet.corp", "http", "intranet.corp", 80, True),
    ("http://intranet.corp", "https", "intranet.corp", None, False),
    ("[::1]:8080", "https", "[::1]", 8080, True),
    ("[::1]:8080", "https", "::1", 8080, True),
    ("*.example.com", "https", "not a host", None, False),
])
def test_what_a_rule_matches(rule: str, scheme: str, host: str, port: int | None,
                             expected: bool) -> None:
    assert parse_host_rule(rule).matches(scheme, host, port) is expected


def test_the_type_refuses_what_the_rule_refuses() -> None:
    with pytest.raises(ValueError, match="normalised"):
        HostRule(host="Hooks.Slack.com")
    with pytest.raises(ValueError, match="https or http"):
        HostRule(host="a.org", scheme="ftp")
    with pytest.raises(ValueError, match="suffix"):
        HostRule(host="com", wildcard=True)
    with pytest.raises(ValueError, match="tuple of HostRule"):
        Permissions(hosts=("hooks.slack.com",))  # type: ignore[arg-type]


def test_render_writes_the_hosts_back_and_parse_reads_them() -> None:
    rules = tuple(parse_host_rule(entry) for entry in (
        "hooks.slack.com", "*.example.com", "api.example.com:8443", "http://intranet.corp",
        "[fd00::5]"))
    manifest = PluginManifest(
        name="chat-post", version="1.0.0", summary="Posts.", entry="chat_post.plugin:Plugin",
        package="chat_post", permissions=Permissions(hosts=rules),
        commands=(CommandDecl(name="post"),))
    text = render_manifest(manifest)
    assert ('hosts = ["hooks.slack.com", "*.example.com", "api.example.com:8443",'
            ' "http://intranet.corp", "[fd00::5]"]') in text
    assert parse_manifest(text) == manifest
    assert parse_manifest(text).hosts == rules
    assert manifest.as_dict()["permissions"]["hosts"] == [rule.text() for rule in rules]


def test_a_plugin_without_hosts_is_written_and_stored_as_before() -> None:
    manifest = parse_manifest(MANIFEST.format(permissions="network = false"))
    assert manifest.hosts == ()
    assert "hosts" not in render_manifest(manifest)
    assert manifest.as_dict()["permissions"] == {"network": False, "filesystem": "none"}
