"""The hub: skills shared through git. Sources and the git transport, semver ranges, registries
and resolution, the lock file, installing into `.agent-apps/packages/`; the operations the hub
skills and the `add`/`install`/`hub` commands run are in `ops`. The run-time integrity check of
installed packages sits lower, in `agentapps.tools.packages`, since every skill lookup uses it."""
