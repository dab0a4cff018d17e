"""Parse stage: pure functions from message bytes or text to Report records."""
