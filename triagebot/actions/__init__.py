"""Actions stage: what a team member asks of a report from Slack — checked and done as a state
change (act.py), and carried out when it takes the lab or the mail (carry_out.py).
"""
