"""What comes from mail, made safe for where it goes: one terminal line (visible.py)."""
