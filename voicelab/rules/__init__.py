"""The pure rules the pipeline applies, each testable without pipecat: when a paused bot stops or resumes
(`barge_in`), which uncommitted chunks may be synthesized early (`speculative`), whether a destructive tool
call has a reason (`tool_reason`) and what the caller answered when asked about it (`confirm`), and which
faults a run injects (`faults`). The gate is `voicelab.gate`."""
