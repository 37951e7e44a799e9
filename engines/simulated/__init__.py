"""Simulated providers: named timing profiles of real engines, the profile engine that plays the tiny
engine's answers at a profile's pace, and the loopback mock server. May import hosted/ and local/.
"""
