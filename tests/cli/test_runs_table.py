"""The tables of `agentapps runs list` and `runs stats` (laid out by rich, written as plain text)."""

from __future__ import annotations

import unicodedata

from agentapps.cli.runs import print_table


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_columns_align_by_display_width_and_rows_never_wrap_in_a_pipe(capsys):
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0-" + "x" * 100
    print_table(["ID", "SKILL", "MODEL", "COST"],
                [["1", "日本語", "[bold]m[/]", "$0.0100"], ["22", "chat", model, "$1.0000"]], left=(1, 2))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3  # a long cell stays on its row when piped
    assert lines[0].split() == ["ID", "SKILL", "MODEL", "COST"]
    assert lines[1].split() == ["1", "日本語", "[bold]m[/]", "$0.0100"]  # text, never markup
    # each column starts at the same screen column on every row: wide characters count twice
    starts = {_cells(line[:line.index(cell)]) for line, cell in zip(lines, ("MODEL", "[bold]m[/]", model),
                                                                    strict=True)}
    assert len(starts) == 1
    ends = {_cells(line) for line in lines}
    assert len(ends) == 1  # the last column is right-aligned: every row ends on one screen column
    assert all(line == line.rstrip() for line in lines)
