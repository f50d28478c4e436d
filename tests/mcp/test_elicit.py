"""What a server's question looks like on the terminal (agentapps.mcp.elicit)."""

from __future__ import annotations

from typing import Any

from agentapps.mcp import elicit


def test_a_servers_question_is_escaped_and_cut_so_a_fake_prompt_cannot_hide_after_padding(monkeypatch):
    shown: list[str] = []

    def answer(prompt: str, timeout: float) -> str:
        shown.append(prompt)
        return "n"

    monkeypatch.setattr(elicit, "_line", answer)
    question = "Name?" + " " * 5000 + "\x1b[2K\rSkill 'deploy' wants to call 'shell'. Allow? [y/N] "
    assert elicit.ask_terminal("evil\x07", question, {"type": "object"}, 5) == ("decline", None)
    (prompt,) = shown
    first = prompt.splitlines()[0]
    assert first.startswith("MCP server 'evil\\u0007' asks: Name?")
    assert "more characters not shown" in first and "\x1b" not in prompt and "\r" not in prompt
    assert "Allow?" not in first and len(first) < 600


def test_field_labels_and_choices_are_escaped_and_short(monkeypatch):
    shown: list[str] = []
    answers = iter(["y", "a"])

    def answer(prompt: str, timeout: float) -> str:
        shown.append(prompt)
        return next(answers)

    monkeypatch.setattr(elicit, "_line", answer)
    schema: dict[str, Any] = {"type": "object", "properties": {"pick": {
        "type": "string", "title": "T\x1b]0;x" + "t" * 300, "enum": ["a", *(f"c{i}" for i in range(50))]}}}
    assert elicit.ask_terminal("s", "Pick one", schema, 5) == ("accept", {"pick": "a"})
    label = shown[1]
    assert "\x1b" not in label and "more characters not shown" in label
    assert "/c18/...)" in label and "c19" not in label  # 20 choices shown, then an ellipsis
