"""The pipeline's services: speech to text (Whisper, pocketsphinx, the fixture's transcript), the text
engine as a pipecat LLM service, and Piper speech synthesis (plain and speculative)."""
