"""Reply stage: the reply upstream a person asks for after a verdict (draft.py, send.py)."""
