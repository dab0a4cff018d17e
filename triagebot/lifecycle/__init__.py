"""Lifecycle stage: what happens to a report after its verdict (states.py, detect.py, follow.py)."""
