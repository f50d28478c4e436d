"""`python -m agentapps`."""

from agentapps.cli import main

main()
