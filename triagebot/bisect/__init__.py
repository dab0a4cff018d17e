"""Bisection after a confirmed verdict: the search over a range (search.py), its run on a lab host
(lab.py), and the daemon's queue of bisections (flow.py).
"""
