"""Ingest stage: sources of raw messages (lore/public-inbox, openwall, files) behind one protocol."""
