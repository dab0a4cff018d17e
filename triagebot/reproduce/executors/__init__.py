"""Reproduce stage: executors, running argv lists on a host (protocol.py, local.py, ssh.py)."""
