"""Records: the frozen data that crosses stages (report.py), the triage states (states.py), how
sure a reading is (certainty.py), the threading rules (threads.py).
"""
