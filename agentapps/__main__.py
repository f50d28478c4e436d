"""`python -m agentapps`."""

import os
import sys

# `python -m` puts the working directory first on sys.path. Modules are imported lazily, some well
# into a run, so a `logging.py` or `colorsys.py` that a skill or agent code wrote into the project
# would be imported in place of the standard one. agentapps itself is imported already and finds
# its own modules through its package, so the working directory goes (as with `python -P`).
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from agentapps.cli import main  # after the path is made safe

main()
