"""Tokenizer wrapper: a `tokenizers` tokenizer.json plus the chat template from tokenizer_config.json.

The same code serves the tiny shipped models and a real LLaDA-8B-Instruct folder: the chat
template is the folder's own Jinja template, rendered without remote code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import jinja2
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from engines.errors import CheckpointError

# The tiny models' special tokens and chat template (LLaDA-like roles, simpler markers).
TINY_SPECIALS = ["<|pad|>", "<|mask|>", "<|eos|>", "<|bos|>", "<|user|>", "<|assistant|>", "<|system|>"]
TINY_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'user' %}<|user|>{{ m['content'] }}"
    "{% elif m['role'] == 'system' %}<|system|>{{ m['content'] }}"
    "{% else %}<|assistant|>{{ m['content'] }}{{ eos_token }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


class ChatTokenizer:
    """Encode chats, decode ids; knows the mask, EOS and end-of-turn ids."""

    def __init__(self, tok: Tokenizer, config: dict, path: Path | None = None) -> None:
        self.tok = tok
        self.path = path
        self.chat_template: str | None = config.get("chat_template")
        self.bos_token: str = _tok_str(config.get("bos_token")) or ""
        self.eos_token: str = _tok_str(config.get("eos_token")) or ""
        self.mask_token: str = _tok_str(config.get("mask_token")) or ""
        self.eos_id = self._id(self.eos_token)
        self.mask_id = self._id(self.mask_token)
        # end-of-turn ids also end an answer (LLaDA: <|eot_id|>, Dream/Qwen2: <|im_end|>, besides the EOS)
        self.stop_ids = {i for i in (self.eos_id, self._id("<|eot_id|>"), self._id("<|im_end|>")) if i is not None}

    def set_mask(self, mask_id: int) -> None:
        """The mask token by id, for folders whose tokenizer_config.json does not name it (Dream)."""
        self.mask_id = mask_id
        self.mask_token = self.tok.id_to_token(mask_id) or ""

    def _id(self, token: str) -> int | None:
        return self.tok.token_to_id(token) if token else None

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size()

    def render(self, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
        if not self.chat_template:
            raise CheckpointError(f"{self.path or 'tokenizer'}: tokenizer_config.json has no chat_template")
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=False)
        env.globals["raise_exception"] = _raise
        return env.from_string(self.chat_template).render(
            messages=list(messages), add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token, eos_token=self.eos_token, tools=None)  # Qwen2-style templates test `tools`

    def encode_chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        return self.tok.encode(self.render(messages), add_special_tokens=False).ids

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.tok.decode([i for i in ids if i not in self.stop_ids and i != self.mask_id],
                               skip_special_tokens=True)

    def piece(self, i: int) -> str:
        """The text one token contributes (empty for special tokens)."""
        if i in self.stop_ids or i == self.mask_id:
            return ""
        return self.tok.decode([i], skip_special_tokens=True)

    @classmethod
    def load(cls, folder: Path) -> ChatTokenizer:
        tj = folder / "tokenizer.json"
        cfg_path = folder / "tokenizer_config.json"
        cfg: dict = {}
        if cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text())
            except json.JSONDecodeError as e:
                raise CheckpointError(f"{cfg_path}: malformed JSON ({e.msg} at line {e.lineno})") from None
        if not tj.is_file() and (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            return cls(_qwen2_bpe(folder, cfg), cfg, folder)
        if not tj.is_file():
            raise CheckpointError(f"{tj}: missing tokenizer file")
        try:
            tok = Tokenizer.from_file(str(tj))
        except Exception as e:  # tokenizers raises a bare Exception on malformed files
            raise CheckpointError(f"{tj}: not a valid tokenizers file ({str(e).splitlines()[0][:120]})") from None
        return cls(tok, cfg, folder)


# Qwen2's pre-tokenizer split (its tokenizer.json / tokenization_qwen2.py), then byte-level BPE
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def _qwen2_bpe(folder: Path, cfg: dict) -> Tokenizer:
    """A Qwen2 tokenizer (Dream ships one as vocab.json + merges.txt and remote code) built without that code:
    NFC, the Qwen2 split, byte-level BPE, and tokenizer_config.json's added tokens at their ids."""
    from tokenizers import AddedToken, normalizers

    try:
        tok = Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    except Exception as e:
        raise CheckpointError(f"{folder / 'vocab.json'}: not a BPE vocabulary with merges.txt "
                              f"({str(e).splitlines()[0][:120]})") from None
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    added = cfg.get("added_tokens_decoder") or {}
    for key in sorted(added, key=lambda k: int(k) if str(k).isdigit() else -1):
        content = _tok_str(added[key])
        if not str(key).isdigit() or not content:
            raise CheckpointError(f"{folder / 'tokenizer_config.json'}: added_tokens_decoder entry '{key}' malformed")
        tok.add_special_tokens([AddedToken(content, special=True, normalized=False)])
        if tok.token_to_id(content) != int(key):
            raise CheckpointError(f"{folder / 'tokenizer_config.json'}: added token {content!r} got id "
                                  f"{tok.token_to_id(content)}, the file says {key}")
    return tok


def _tok_str(v: object) -> str | None:
    # tokenizer_config.json stores special tokens as strings or as {"content": ...} objects
    if isinstance(v, dict):
        return v.get("content")
    return v if isinstance(v, str) else None


def _raise(msg: str) -> None:
    raise CheckpointError(f"chat template: {msg}")


def train_tiny(texts: Iterable[str], vocab_size: int = 1024) -> ChatTokenizer:
    """Byte-level BPE with one token per digit, so numbers are copied digit by digit."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\d"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=TINY_SPECIALS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return ChatTokenizer(tok, tiny_tokenizer_config())


def tiny_tokenizer_config() -> dict:
    return {"bos_token": "<|bos|>", "eos_token": "<|eos|>", "pad_token": "<|eos|>", "mask_token": "<|mask|>",
            "chat_template": TINY_CHAT_TEMPLATE, "tokenizer_class": "PreTrainedTokenizerFast"}
