"""Child processes run on behalf of skills."""
