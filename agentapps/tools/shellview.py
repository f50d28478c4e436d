"""What permission checks see of a `shell` call's command: its simple commands, reduced.

`command` is parsed as the line /bin/sh runs (`shellparse`), `argv` is taken as words without
parsing; either way each simple command is reduced to the program that really runs (`shellwords`)
and shown as its words re-quoted (`shlex.join`). The result is a `Compound`: trust rules fire on
any of its commands, grants must admit every one, and a problem (what cannot be reduced to plain
words) fires every rule and is admitted by no constraint.
"""

from __future__ import annotations

import shlex
from typing import Any

from agentapps.tools.compound import Compound


def command_view(command: Any, argv: Any, root: str) -> Compound:
    """The reduced simple commands of a `shell` call run in `root` (the project)."""
    from agentapps.tools.shellparse import split
    from agentapps.tools.shellwords import reduce

    if isinstance(argv, list):
        found = reduce([str(a) for a in argv], root)
    else:
        found = [one for s in split(str(command), root)
                 for one in (reduce(s.words, root) if s.shown is None else [s])]
    problem = next((s.problem for s in found if s.problem), None)
    return Compound(tuple(s.shown if s.shown is not None else shlex.join(s.words) for s in found), problem)
