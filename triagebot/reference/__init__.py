"""Reference tables shared by the rules and the stages: units of measure (units.py), CPU
microarchitectures (cpus.py).
"""
