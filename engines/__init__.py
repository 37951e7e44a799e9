"""Text engines: pure torch and plain Python, knowing nothing of voice (never imports voicelab).

At the top, the engine contract (standard library only) and the registry:

    protocol.py      EngineLike / GenerationLike, Usage: what every engine meets
    snapshot.py      what an engine shows after each step
    errors.py        one-line errors naming the file and what is wrong
    text_canvas.py   snapshots from streamed text (HTTP engines)
    trace.py         record and replay any engine's snapshot stream
    tool_span.py     the tool-span grammar `[name(k=v, ...)]`: the one parser for engines and the lab
    registry.py      one spec string names any engine (`--engine SPEC`); checks options, opens engines

Subpackages, by concern, and whom each may import:

    local/       the LLaDA-layout network, checkpoints, tokenizer, samplers, training   contract (training: shop)
    hosted/      OpenAI-compatible and Mercury clients over HTTP                         contract
    simulated/   timing profiles of real engines, the profile engine, the mock server    contract, hosted, local
    shop/        the fictional bike shop: facts, corpus, phrasings, answer scoring       contract
    decision/    the decision model (turn complete? interruption?) and its training      contract, local, shop
    eval/        held-out evaluation, the engine bench, the commit-policy probe          everything

The registry imports other subpackages inside the functions that need them, so reading a spec loads no
torch; eval/ loads the shop at import, and torch inside the functions that run an engine (its engine bench
imports the local engine at the top). `tests/repo/test_layout.py` checks these rules.
"""
