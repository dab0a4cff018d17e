"""Dispatch: lab runs carried out for the daemon (protocol.py; inprocess.py on the embedded default)."""
