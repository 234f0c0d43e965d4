"""The staff evaluation API: queue a run, then follow it."""
