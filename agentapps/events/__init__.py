"""The in-process event bus behind the event-* skills (see `bus`)."""
