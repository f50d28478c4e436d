"""cascade package."""

LOCAL_ENV_PREFIX = "AGENTAPPS_LOCAL_"  # AGENTAPPS_LOCAL_<PATH> overrides (cascade.local)
