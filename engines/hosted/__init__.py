"""Hosted engines over HTTP: the OpenAI chat-completions stream (OpenAI, Gemini, Groq, vLLM, ...) and
Inception's Mercury. Imports the contract only.
"""
