"""`voicelab bench stt`: the recognisers side by side on recorded speech."""
