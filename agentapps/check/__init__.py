"""`agentapps check`: validate skills without running them (see agentapps.check.run)."""
