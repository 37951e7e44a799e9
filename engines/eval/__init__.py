"""Evaluation of the engines: correctness on held-out callers, the engine bench, the commit-policy
probe. May import every subpackage.
"""
