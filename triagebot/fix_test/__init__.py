"""Fix testing after a confirmed verdict: the series made am-ready with b4 (series.py), which fix
to test (choice.py), its run on the lab (lab.py), the share recovered (recovery.py), and the one
flow for the command, the daemon and Slack (flow.py).
"""
