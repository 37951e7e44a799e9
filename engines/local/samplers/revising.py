"""A revising sampler in the WINO / LLaDA-2.1 editing style: draft boldly, then verify.

Each step drafts every masked token of the current block above a low threshold (at least one),
then verifies tokens drafted earlier in this block with a second forward in which half of them
(alternating each step) are masked again, so each is re-predicted with its neighbours visible: a token the model now finds improbable is re-masked, and
one the model would confidently replace by another is overwritten. So already-decoded tokens
really change here, inside the current block only; finished blocks and pinned tokens never do.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from engines.local.model import LLaDAModel
from engines.local.samplers.base import Canvas, Control, SamplerConfig, Special, Step, blocks


def sample(model: LLaDAModel, prompt: list[int], special: Special, cfg: SamplerConfig,
           ctl: Control) -> Iterator[Step]:
    cv = Canvas(model, prompt, special, cfg)
    mask_id = special.mask_id
    done_len = 0
    for s, e in blocks(cfg):
        first, post_edits, n_steps = True, 0, 0
        while True:
            n_steps += 1
            # past the step budget every remaining mask is filled and nothing is re-masked,
            # so a block always finishes even when the model keeps doubting itself
            settle = n_steps > cfg.block_size
            if ctl.cancelled.is_set():
                return
            block = cv.resp[s:e]
            masked = block == mask_id
            drafted_before = ~masked
            if masked.any():  # draft
                logits = cv.logits(s, e, refresh=first)
                first = False
                guess, conf = cv.choose(logits)
                take = masked & ((conf >= cfg.draft_threshold) | settle)
                score = torch.where(masked, conf, torch.full_like(conf, -1.0))
                take[score.argmax()] = True
                block[take] = guess[take]
            else:  # a verification-only pass (post-edit step)
                post_edits += 1
            # verify the earlier drafts of this block that nobody pinned
            pinned = ctl.pinned
            can_revise = drafted_before.clone()
            can_revise[: max(0, min(e, pinned) - s)] = False
            revised: list[int] = []
            # verify half of the earlier drafts per step (alternating), so each is re-predicted
            # with its neighbours visible: a context the draft did not have
            parity = (torch.arange(s, e, device=block.device) + n_steps) % 2 == 0
            if int(can_revise.sum()) > 1:
                can_revise &= parity
            if can_revise.any():
                saved = block.clone()
                block[can_revise] = mask_id
                vlogits = cv.logits(s, e, refresh=False)
                block.copy_(saved)
                vprobs = torch.softmax(vlogits, dim=-1)
                p_cur = vprobs.gather(-1, block[:, None].clamp_max(vprobs.shape[-1] - 1))[:, 0]
                p_best, best = vprobs.max(-1)
                for i in torch.nonzero(can_revise).flatten().tolist():
                    if best[i] != block[i] and p_best[i] >= cfg.edit_threshold:
                        block[i] = best[i]  # token-to-token edit
                        revised.append(s + i)
                    elif p_cur[i] < cfg.remask_threshold and not settle:
                        block[i] = mask_id  # back to mask: decided again later
                        revised.append(s + i)
            still_masked = bool((block == mask_id).any())
            # a block is final once it has no masks and both halves passed verification unchanged
            # (or the post-edit / step budget ran out)
            block_final = not still_masked and (
                (not revised and post_edits >= 2) or post_edits >= cfg.max_post_edit_steps or settle)
            if block_final:
                done_len = e
            finished = block_final and cv.answer_complete()
            full_conf = torch.zeros(cfg.canvas)
            full_conf[s:e] = conf
            full_guess = cv.resp.clone()
            full_guess[s:e] = guess
            yield cv.step(full_conf, full_guess, done_len, pinned, finished, revised)
            if finished:
                return
            if block_final:
                break
