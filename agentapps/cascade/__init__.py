"""cascade package."""

LOCAL_ENV_PREFIX = "AGENTAPPS_LOCAL_"  # AGENTAPPS_LOCAL_<PATH> overrides (cascade.local)
SEED_LOCAL_ENV_PREFIX = "AGENT_APPS_LOCAL_"  # the seed's spelling of the same, read beside ours
