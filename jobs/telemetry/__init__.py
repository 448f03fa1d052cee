"""A host's telemetry from its own counters (pure): jobs/telemetry/proc.py."""
