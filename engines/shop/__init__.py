"""The one fictional business the tiny engines serve: its facts, the caller corpus, phrasings, the
recogniser noise model, the out-of-domain set and answer scoring. Imports the contract only.
"""
