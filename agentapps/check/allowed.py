"""`allowed-tools`: every pattern parses, and each one selects at least one skill on the search path."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentapps.check.findings import Finding
from agentapps.check.scope import Scope, Site
from agentapps.errors import UsageError
from agentapps.tools.foreign import problems as foreign_problems
from agentapps.tools.lookup import EVERYTHING
from agentapps.tools.names import did_you_mean
from agentapps.tools.policy import Policy, Rule, matches_pattern


@dataclass
class PatternMemo:
    """Answers shared by every skill of one check: most projects repeat a handful of patterns."""

    selects: dict[tuple[bool, str], bool] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)

    def selects_any(self, rule: Rule, scope: Scope) -> bool:
        key = (rule.tag, rule.selector)
        if rule.tag and scope.lookup.reads is not None:
            scope.lookup.reads.add(EVERYTHING)  # answered from every skill's tags, perhaps by an earlier skill
        if key not in self.selects:
            if rule.tag:
                self.selects[key] = any(matches_pattern(rule.selector, tag) for tag in scope.tags())
            elif rule.literal:
                self.selects[key] = rule.selector in scope.names()
            else:
                self.selects[key] = any(matches_pattern(rule.selector, name) for name in scope.names())
            # a server whose tool list is not cached yet may offer it: not a finding until it is
            self.selects[key] = self.selects[key] or (not rule.tag and any(
                rule.selector.startswith(f"{prefix}-") for prefix in scope.unlisted_servers()))
        return self.selects[key]

    def hint(self, name: str, scope: Scope) -> str:
        if name not in self.hints:  # difflib over every name is the slow part of a failing check
            self.hints[name] = did_you_mean(name, scope.names())
        return self.hints[name]


def allowed_tools(site: Site, memo: PatternMemo) -> list[Finding]:
    tool = site.tool
    source = tool.frontmatter.get("allowed-tools")
    if source is None:
        return []
    try:
        policy = Policy.parse(source, tool.name)
    except UsageError as exc:
        return [site.at(["allowed-tools"], "error", "malformed-pattern", exc.message)]
    found: list[Finding] = []
    for problem in foreign_problems(source):
        message = f"Skill '{tool.name}' allowed-tools: {problem}; it grants nothing here."
        found.append(site.at(["allowed-tools"], "warning", "foreign-tool", message))
    for rule in policy.rules or ():
        if memo.selects_any(rule, site.scope):
            continue
        if rule.tag:
            what = f"no skill carries the tag '{rule.selector}'"
        else:
            what = "no skill on the search path matches it"
        hint = memo.hint(rule.selector, site.scope) if rule.literal else ""
        message = f"Skill '{tool.name}' allowed-tools pattern '{rule.text}' selects nothing: {what}.{hint}"
        found.append(site.at(["allowed-tools"], "warning", "unmatched-pattern", message))
    return found


def trust_rules(site: Site, memo: PatternMemo) -> list[Finding]:
    """`metadata.trust` rules use the allowed-tools syntax: each parses and selects some skill
    (a rule that never fires is an approval that is never asked for)."""
    from agentapps.trust import rules_of

    tool = site.tool
    found: list[Finding] = []
    try:
        texts = rules_of(tool.metadata, tool.name)
    except UsageError as exc:
        return [site.at(["metadata", "trust"], "error", "malformed-pattern", exc.message)]
    for text in texts:
        try:
            rule = Rule.parse(text)
        except UsageError as exc:
            message = f"Skill '{tool.name}' trust rules: {exc.message}"
            found.append(site.at(["metadata", "trust"], "error", "malformed-pattern", message))
            continue
        if not memo.selects_any(rule, site.scope):
            what = f"no skill carries the tag '{rule.selector}'" if rule.tag else "no skill matches it"
            message = f"Skill '{tool.name}' trust rule '{text}' never fires: {what}."
            found.append(site.at(["metadata", "trust"], "warning", "unmatched-pattern", message))
    return found
