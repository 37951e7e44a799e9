"""The live mic demo of `voicelab serve`: web app, sessions, and the page (static/)."""
