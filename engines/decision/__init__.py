"""The decision model: a typed yes/no question about a caller's words (turn complete? interruption?),
its corpus, hand-written probe and training. May import local/ and shop/.
"""
