"""Labelled caller utterances for the decision model's two typed questions.

- `turn_complete`: is the caller's turn complete (answer: yes) or cut off and likely to go on
  (no)? Complete: questions and requests from the call-centre corpus (engines/shop/corpus.py) and
  our own templates, bare answers (names, digits, "yes", "no", "okay"), closings ("thank you
  goodbye"). Cut off: the same sentences stopped after a word that cannot end a sentence (a
  preposition, article, conjunction, "my name is"), phone and order numbers stopped half way
  (as digits or as words), filler starts ("um so i wanted to"), prefaces (a discourse marker, a
  preamble or a vocative with nothing asked yet: "so listen", "the thing is", "and so my
  friends"), and an empty transcript. A full request that *starts* with a preface ("so um what
  time do you open") is complete: the end of the words decides, not their opening.
- `interruption`: the bot is talking and paused at the caller's voice; are the words heard so
  far a real interruption (yes: a correction, "wait", a new request, or the start of one) or not
  (no: a backchannel like "mm hmm", or recogniser noise like "", "the", "uh")?

Text then passes through recogniser-like noise (dropped, substituted, repeated words, fillers,
digits said as words) and `transcript_norm.normalize`, so the model holds on imperfect
transcripts. The last word is never touched: it is what decides a cut-off. The held-out split
uses other seeds and also draws from templates the training split never sees (`novel` marks them).

Misheard endings (`last_word_slip`, off by default and off for the shipped model): a recogniser often
garbles exactly the last word of a complete turn ("or where is the sharp", "great on cue"), and a model
that has only seen clean endings calls such a turn cut off. With probability `last_word_slip` a complete
turn's last word is replaced by one of its sound-alikes (`engines.shop.asr_noise.SOUND_ALIKE`) or by the last
word of another complete sentence, never by a word after which a sentence cannot end (`CUT_WORDS`).
Tried and not shipped (README, turn-taking): this corpus's cut-offs all end on a `CUT_WORD`, so with
slips the model learns "any other last word: complete" and calls real cut-offs complete ("and so my
fellow americans", "go forward"), although its held-out figures improve.

The broad corpus (`broad`, off by default and off for the shipped model; tried and not shipped, README,
turn-taking) adds cut-offs that end on a content word (a verb before its object: "can you fix"; a modifier
before its noun: "i want a new"; a subordinate clause alone: "if my bike is ready", complete when a request
follows it), off-topic requests and unrelated statements as complete turns, more vocatives, and, with
`last_word_slip`, the same slip on prefaces and clauses (still unfinished). Every generated figure held, but on
hand-written turns outside the generator (`engines.decision.probe`) the models trained on it did worse.

    python -m engines.decision.corpus --n 20 --seed 0
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass

from engines.local.input_norm import normalize
from engines.shop import business as B
from engines.shop import corpus
from engines.shop.asr_noise import SOUND_ALIKE

TASKS = ("turn_complete", "interruption")
SPLITS = ("train", "heldout")


@dataclass(frozen=True)
class DecisionExample:
    """One labelled caller utterance of the decision corpus."""

    task: str
    text: str  # normalized transcript
    answer: bool
    kind: str  # what made the label, e.g. "question", "cut_article", "backchannel"
    context: str = ""  # the bot's last line (turn_complete) or the line it was speaking (interruption)
    novel: bool = False  # drawn from a template only the held-out split uses


# words after which an English sentence cannot end: the caller has more to say
CUT_WORDS: dict[str, str] = {
    **{w: "cut_preposition" for w in ("on", "at", "for", "to", "in", "with", "about", "from", "of", "under")},
    **{w: "cut_article" for w in ("a", "an", "the", "my", "your", "some")},
    **{w: "cut_conjunction" for w in ("and", "but", "or", "so", "because", "if", "then")},
    **{w: "cut_verb" for w in ("is", "are", "would", "could", "can", "need", "want", "like", "get", "book",
                               "check", "move", "change", "i")},
}

# Words a sentence can grammatically end on but a caller's turn almost never does when more follows:
# a verb that needs its object ("can you fix" | "my wheel"), a modifier before its noun ("i want a new" |
# "chain"). Cut-offs on them end on a content word, as real ones do ("and so my fellow americans" | "ask
# not..."), so the model cannot learn "a cut-off ends on a function word". Verbs that often stand alone
# in a caller's turn ("cancel", "order", "look", "take", "cost") are left out: those cuts could be whole turns.
CONTENT_CUTS: dict[str, str] = {
    **{w: "cut_transitive" for w in ("sell", "fix", "buy", "bring", "rent", "tell", "give", "put",
                                     "replace", "pick", "drop", "reserve", "ask", "show")},
    **{w: "cut_modifier" for w in ("new", "electric", "road", "mountain", "inner", "spare", "front", "rear")},
}
# a subordinate clause says why or when; the main clause (the request) is still to come. Alone it is a
# cut-off ending on whatever word the clause ends on; followed by a request it is a complete turn.
SUBORDINATORS = (["if", "when", "because", "since", "before", "after", "as soon as", "while", "once", "unless",
                  "so that", "even though"], ["in case", "whenever", "now that", "although"])
CLAUSES = (["my bike is ready", "you are open on {day}", "i come in on {day} at {time}", "the chain keeps falling off",
            "my brakes are squeaking", "i drop it off on {day}", "it is not too busy", "the repair is done",
            "you have time on {day}", "i cannot make it on {day}", "my order {num} has shipped",
            "i am in town on {day}", "the weather is nice", "my daughter needs {service}", "i booked {service}",
            "my back wheel is bent", "you called me earlier"],
           ["my tyre went flat again", "you are busy on {day}", "the mechanic is free", "i get off work at {time}"])

# the corpus's in-domain requests: whole sentences with known meaning (its off-topic and garbled
# sentences are left out: whether a garble is a finished turn is not something we can label)
CORPUS_INTENTS = ("greeting", "hours", "address", "book", "book_ask_name", "book_name_followup", "reschedule",
                  "cancel", "order_status", "readback_phone", "readback_booking", "small_talk", "goodbye")
NEW_NAMES = ("priya", "tom", "wendy", "omar", "lucy", "raj", "sofia", "henry", "mei", "pablo")
# more first names for both splits (not the held-out NEW_NAMES): a name answer is complete whatever the name
MORE_NAMES = ("arjun", "beatrice", "carlos", "dmitri", "eva", "felix", "gita", "hassan", "ines", "jonas", "kemal",
              "lena", "marco", "nadia", "oscar", "paula", "ravi", "sara", "tariq", "ursula", "victor", "wei")

# (train templates, held-out-only templates); {day} {time} {name} {service} {num} are filled in
QUESTIONS = ([
    "do you sell helmets", "how much is {service}", "can i bring my bike in on {day}",
    "do you have any kids bikes in stock", "is there parking near the shop", "do you take credit cards",
    "how long does {service} take", "can i drop my bike off on {day} morning", "are you open on public holidays",
    "do you do {service} while i wait", "i need {service} for my road bike", "can someone look at my brakes",
    "is my bike ready", "i would like to speak to a mechanic", "can i pick up my bike on {day} at {time}",
    "please book me in for {service}", "i want to buy a new chain", "do you rent bikes",
    "what are your hours on {day}", "can i get a quote for {service}", "where can i park",
    "how much would it cost to fix a chain", "is anyone free to look at my wheel today",
    "my brakes are squeaking", "i think my gears need {service}", "the chain keeps falling off",
], [
    "do you sell electric bikes", "what does {service} cost", "could i come in on {day} after work",
    "have you got inner tubes for a mountain bike", "do you fix punctures on the spot",
    "can you order a part for me", "i would like to book {service} for my daughter",
    "when will my bike be finished", "is it possible to come in on {day} at {time}",
])
CLOSINGS = ([
    "thank you goodbye", "thanks bye", "that is all thank you", "okay thanks", "no that is it thanks",
    "great thanks a lot", "bye bye", "have a nice day", "thank you very much", "perfect thank you",
    "okay bye", "cheers bye",
], ["thanks so much take care", "alright thank you bye now", "that is everything thanks", "lovely thank you"])
SHORT_ANSWERS = ([
    "yes", "no", "okay", "sure", "yes please", "no thanks", "that is right", "that works", "correct",
    "yeah that is fine", "sounds good", "yeah", "no that is wrong", "yes that is correct", "fine",
    "no it is not", "that is fine", "please do", "definitely", "sounds great", "no problem",
    "that would be great", "not really", "i think so", "exactly", "yeah sure", "certainly", "okay great",
    "no not yet", "yes i do", "no i do not", "that is it",
], ["yep", "absolutely", "nope", "that is perfect", "of course", "go ahead"])
NAME_ANSWERS = (["{name}", "it is {name}", "the name is {name}", "my name is {name}", "put it under {name}",
                 "{name} please", "this is {name}", "call me {name}", "book it for {name}", "{name} thanks",
                 "yes it is {name}", "under {name}", "it is {name} {name2}", "{name} {name2}"], ["it is for {name}", "you can put {name}", "under {name} please"])
NUMBER_ANSWERS = (["{num}", "it is {num}", "my number is {num}", "the order number is {num}",
                   "order {num}", "my phone number is {num}"],
                  ["the number is {num}", "you can reach me on {num}", "it should be {num}"])
# the caller will go on: these openings stop before anything is asked
FILLER_STARTS = ([
    "um so i wanted to", "so i was wondering if", "yeah hi i was calling about", "i need to", "could you",
    "and also", "um", "uh", "so", "well", "the thing is", "i was just going to ask", "hi yes i wanted to ask",
    "okay so um", "right so", "what i need is", "i was hoping to", "can you tell me",
], ["um i was going to", "yes hello i am calling because", "so basically", "and um", "hi so i just"])
# prefaces: a discourse marker, a preamble or an opener that announces the request without making it
# yet; alone, or with a vocative after (or before) it, the caller has more to say. The held-out
# lists hold openers and vocatives the training split never sees.
PREFACES = ([
    "and so", "so listen", "well you see", "the thing is", "what i wanted to ask is", "okay so um", "now then",
    "let me tell you", "here is the thing", "first of all", "you know what", "so here is the deal", "and then",
    "right so listen", "so what happened was", "the reason i am calling is", "i have to say", "okay listen",
    "so my question is", "as i was saying", "to be honest", "i just wanted to say", "well um", "and now",
    "what i would like to know is", "so anyway", "look", "listen",
], [
    "so get this", "now look", "so the story is", "what i am trying to say is", "and so then", "well now",
    "the point is", "let me explain", "to begin with", "so here is my question", "i must say", "now listen",
])
VOCATIVES = ([
    "my friends", "my dear friends", "my fellow customers", "everyone", "folks", "guys", "ladies and gentlemen",
    "everybody", "my friend", "you guys", "all of you", "people", "mate",
], ["dear listeners", "sir", "madam", "my good friends", "team", "colleagues", "boys and girls"])
# the broad corpus's vocatives: "my fellow X", "dear X" with other nouns
VOCATIVES_BROAD = (VOCATIVES[0] + ["my fellow cyclists", "my fellow riders", "my fellow citizens", "dear neighbours",
                                   "my fellow members", "dear parents"],
                   VOCATIVES[1][:1] + ["my fellow workers", "dear students"] + VOCATIVES[1][1:])
BOT_QUESTIONS = (
    "what name should i put it under?", "is that right?", "can i help with anything else?",
    "shall i book that for you?", "what is your phone number?", "what is your order number?",
    "which day works for you?", "does that time suit you?",
)
# The acknowledgements a caller says most over a talking bot are all in training (a backchannel the
# model never saw, "got it", stopped the bot for good); the held-out ones are rarer phrasings.
BACKCHANNELS = ([
    "mm hmm", "uh huh", "right", "okay", "yeah", "yes", "sure", "mhm", "okay okay", "yeah yeah", "mm",
    "uh huh yeah", "right right", "okay yeah", "yes yes", "hmm", "ah okay", "alright", "all right",
    "i see", "got it", "yep", "oh okay", "cool", "great", "okay got it", "perfect", "sounds good", "oh right",
    "uh huh okay", "sure sure", "mm hmm yeah", "good", "nice", "okay great", "yes please", "oh i see",
], ["gotcha", "ah i see", "makes sense", "fair enough", "mm hmm right", "yeah got it", "oh nice"])
NOISE = ([
    "", "the", "uh", "um", "a", "hm", "ah", "oh", "and", "it", "in", "i", "huh", "the the", "uh the", "a a",
    "on", "eh",
], ["of", "he", "an", "um uh", "to"])
CORRECTIONS = ([
    "no wait i meant {day}", "no {day} not {day2}", "sorry i said {time}", "actually make it {day}",
    "no it is {name}", "that is wrong", "no that is not right", "wait that is not my number", "no no",
    "no", "wait", "stop", "hold on", "hang on", "excuse me", "sorry what was that", "can you repeat that",
    "sorry", "what", "no i said {name}", "not {day} {day2}", "wait wait", "hold on a second", "no sorry",
    "actually can we do {time} instead", "that is not what i asked", "stop please", "can i say something",
], [
    "no no i meant {time}", "hang on that is wrong", "sorry can i change that", "wait a moment",
    "pardon", "just a second", "nope {day}", "let me stop you there",
])

_OPENERS = {"hi", "hello", "um", "uh", "yeah", "okay", "hey"}
_SUBSTITUTES = ("a", "the", "in", "and", "it", "uh", "on", "to", "is", "i", "you", "for", "that")
_NUM_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TENS = {"1 0": "ten", "1 1": "eleven", "1 2": "twelve", "3 0": "thirty"}


def _pick(r: random.Random, pair: tuple[list[str], list[str]], split: str) -> tuple[str, bool]:
    """A template: train uses the first list; held-out also the second, with a quarter of its draws."""
    if split == "heldout" and r.random() < 0.25:
        return r.choice(pair[1]), True
    return r.choice(pair[0]), False


def _fill(r: random.Random, template: str, split: str) -> str:
    names = NEW_NAMES if split == "heldout" and r.random() < 0.3 else B.NAMES + MORE_NAMES
    day, day2 = r.sample(B.DAYS, 2)
    num = " ".join(r.choice("0123456789") for _ in range(r.choice((5, 7))))
    name, name2 = r.sample(names, 2)
    return template.format(day=day, day2=day2, time=r.choice(B.TIMES), name=name, name2=name2,
                           service=r.choice(B.SERVICES), num=num)


def _bot_line(r: random.Random) -> str:
    """Something the bot says: an agent reply from the call-centre corpus, its tool call removed."""
    reply = corpus.GENERATORS[r.choice(CORPUS_INTENTS)](r).reply
    return reply.split("] ", 1)[1] if reply.startswith("[") else reply


def _corpus_turn(r: random.Random) -> tuple[str, str]:
    """A caller utterance from the call-centre corpus, with the bot line before it (or none)."""
    e = corpus.GENERATORS[r.choice(CORPUS_INTENTS)](r)
    ctx = e.messages[-2]["content"] if len(e.messages) > 1 else ""
    return e.messages[-1]["content"], ctx


def _preface(r: random.Random, split: str, broad: bool = False) -> tuple[str, bool]:
    """An opener alone, with a vocative after (or before) it, or a vocative alone; maybe a hesitation."""
    o, novel = _pick(r, PREFACES, split)
    roll = r.random()
    if roll < 0.4:
        text = o
    else:
        v, novel_v = _pick(r, VOCATIVES_BROAD if broad else VOCATIVES, split)
        novel = novel or novel_v
        text = f"{o} {v}" if roll < 0.85 else f"{v} {o}" if roll < 0.93 else v
        if roll >= 0.93:
            novel = novel_v
    if r.random() < 0.15:
        text += r.choice((" um", " uh"))
    return text, novel


def _clause(r: random.Random, split: str) -> tuple[str, bool]:
    """A subordinate clause alone ("if my bike is ready"): the request it leads to is still to come."""
    sub, novel_s = _pick(r, SUBORDINATORS, split)
    clause, novel_c = _pick(r, CLAUSES, split)
    return f"{sub} {_fill(r, clause, split)}", novel_s or novel_c


def _complete(r: random.Random, split: str, broad: bool = False) -> tuple[str, str, str, bool]:
    """(text, kind, context, novel) of a complete turn."""
    roll = r.random()
    if roll < 0.3:
        text, ctx = _corpus_turn(r)
        return text, "request", ctx, False
    if roll < 0.47:
        if broad and r.random() < 0.4:
            # what else callers say (off-topic requests, unrelated statements): whole sentences beyond the
            # shop's, so that "complete" is learnt from sentence structure, not from the shop's vocabulary
            return (corpus._off_topic(r) if r.random() < 0.5 else corpus._unrelated(r)), "off_topic", "", False
        t, novel = _pick(r, QUESTIONS, split)
        return _fill(r, t, split), "question", "", novel
    if roll < 0.57:
        # a preface or a subordinate clause, then the whole request: complete, the words end on the request
        pre, novel = _clause(r, split) if broad and r.random() < 0.3 else _preface(r, split, broad)
        if r.random() < 0.5:
            t, novel_q = _pick(r, QUESTIONS, split)
            return f"{pre} {_fill(r, t, split)}", "preface_request", "", novel or novel_q
        text, ctx = _corpus_turn(r)
        return f"{pre} {text}", "preface_request", ctx, novel
    if roll < 0.67:
        t, novel = _pick(r, CLOSINGS, split)
        return t, "closing", _bot_line(r) if r.random() < 0.5 else "", novel
    if roll < 0.8:
        t, novel = _pick(r, SHORT_ANSWERS, split)
        return t, "short_answer", r.choice(BOT_QUESTIONS) if r.random() < 0.7 else "", novel
    if roll < 0.9:
        t, novel = _pick(r, NAME_ANSWERS, split)
        return _fill(r, t, split), "name", BOT_QUESTIONS[0] if r.random() < 0.7 else "", novel
    t, novel = _pick(r, NUMBER_ANSWERS, split)
    return _fill(r, t, split), "number", r.choice(BOT_QUESTIONS[4:6]) if r.random() < 0.6 else "", novel


def _cut(r: random.Random, text: str, broad: bool = False) -> tuple[str, str] | None:
    """Stop a complete sentence after a word it cannot end on (or a verb or modifier before what it needs),
    or half way through a long number."""
    w = text.split()
    # a run of 5+ digits is a phone or order number: stopping inside it leaves it unfinished
    digit_cuts = [i for i in range(1, len(w)) if w[i - 1].isdigit() and w[i].isdigit() and _run_len(w, i) >= 5]
    word_cuts = [i for i in range(1, len(w)) if w[i - 1] in CUT_WORDS]
    content_cuts = [i for i in range(1, len(w)) if broad and w[i - 1] in CONTENT_CUTS]
    # a 5-digit stop is left out: 5 digits are a whole order number (numbers here are 5 or 7 long)
    digit_cuts = [i for i in digit_cuts if _run_start(w, i) != i - 5]
    if digit_cuts and r.random() < 0.5:
        i = r.choice(digit_cuts)
        return " ".join(w[:i]), "cut_number"
    if content_cuts and (not word_cuts or r.random() < 0.4):
        i = r.choice(content_cuts)
        return " ".join(w[:i]), CONTENT_CUTS[w[i - 1]]
    if word_cuts:
        i = r.choice(word_cuts)
        return " ".join(w[:i]), CUT_WORDS[w[i - 1]]
    return None


def _run_start(w: list[str], i: int) -> int:
    """Start of the digit run that ends just before position i (i itself if w[i - 1] is no digit)."""
    a = i
    while a > 0 and w[a - 1].isdigit():
        a -= 1
    return a


def _half_number(r: random.Random, split: str) -> tuple[str, str, bool]:
    """A number answer stopped inside its digits (never at 5: that is a whole order number)."""
    t, novel = _pick(r, NUMBER_ANSWERS, split)
    w = _fill(r, t, split).split()
    a = next(i for i, x in enumerate(w) if x.isdigit())
    n = _run_len(w, a)
    keep = r.choice([k for k in range(1, n) if k != 5])
    return " ".join(w[:a + keep]), r.choice(BOT_QUESTIONS[4:6]) if r.random() < 0.6 else "", novel


def _run_len(w: list[str], i: int) -> int:
    """Length of the digit run that covers position i."""
    a = i
    while a > 0 and w[a - 1].isdigit():
        a -= 1
    b = i
    while b < len(w) and w[b].isdigit():
        b += 1
    return b - a


def _incomplete(r: random.Random, split: str, broad: bool = False) -> tuple[str, str, str, bool]:
    roll = r.random()
    if roll < 0.15:
        t, novel = _pick(r, FILLER_STARTS, split)
        return t, "filler_start", "", novel
    if roll < 0.3:
        text, novel = _preface(r, split, broad)
        return text, "preface", _bot_line(r) if r.random() < 0.4 else "", novel
    if roll < 0.38:
        text, ctx, novel = _half_number(r, split)
        # said as words half the time, as a recogniser may write it ("five five five")
        if r.random() < 0.5:
            text = " ".join(_NUM_WORDS[int(x)] if x.isdigit() else x for x in text.split())
        return text, "cut_number", ctx, novel
    if roll < 0.43:
        return r.choice(("my name is", "the name is", "it is", "my number is", "my phone number is",
                         "the order number is")), "cut_verb", r.choice(BOT_QUESTIONS[:1] + BOT_QUESTIONS[4:6]), False
    if roll < 0.46:
        return "", "empty", "", False
    if broad and roll < 0.54:
        text, novel = _clause(r, split)
        return text, "cut_clause", "", novel
    for _ in range(20):
        text, kind, ctx, novel = _complete(r, split, broad)
        if kind in ("short_answer", "closing"):
            continue
        cut = _cut(r, text, broad)
        if cut:
            return cut[0], cut[1], ctx, novel
    return "um", "filler_start", "", False


def _interrupt(r: random.Random, split: str) -> tuple[str, str, bool]:
    roll = r.random()
    if roll < 0.5:
        t, novel = _pick(r, CORRECTIONS, split)
        return _fill(r, t, split), "correction", novel
    text, _ = _corpus_turn(r) if roll < 0.8 else (_fill(r, _pick(r, QUESTIONS, split)[0], split), "")
    w = text.split()
    lead = 0
    while lead < len(w) - 2 and w[lead] in _OPENERS:
        lead += 1
    # the words heard so far: a request may still be coming in, but two words of it (past any
    # "yeah hi", which alone is a backchannel) already make an interruption
    k = r.randint(min(lead + 2, len(w)), len(w))
    return " ".join(w[:k]), "new_request", False


def _stray_words() -> tuple[str, ...]:
    """Words a recogniser may make of a cough or a bump: any corpus word that alone says nothing.

    Words that alone can interrupt (a correction's "no", a day, a name, a digit) are left out, and
    so are the held-out templates' words, so that held-out backchannels stay unseen."""
    r = random.Random(0)
    words = {w for _ in range(400) for w in normalize(_bot_line(r) + " " + _corpus_turn(r)[0]).split()}
    keep_out = {w for t in CORRECTIONS[0] + CORRECTIONS[1] + BACKCHANNELS[1] + NOISE[1] for w in t.split()}
    keep_out |= set(B.DAYS) | set(B.NAMES) | set(NEW_NAMES) | set(_NUM_WORDS) | {"am", "pm"}
    keep_out |= {"hello", "hey", "hi", "bye", "goodbye"}  # whole requests of the corpus (a greeting, a closing)
    return tuple(sorted(w for w in words - keep_out if w.isalpha()))


STRAY_WORDS = _stray_words()


def _not_interrupt(r: random.Random, split: str) -> tuple[str, str, bool]:
    if r.random() < 0.55:
        t, novel = _pick(r, BACKCHANNELS, split)
        return t, "backchannel", novel
    if r.random() < 0.3:
        return r.choice(STRAY_WORDS), "stray_word", False
    t, novel = _pick(r, NOISE, split)
    return t, "noise", novel


def _spoken_numbers(r: random.Random, words: list[str]) -> list[str]:
    """Digits said as words, as a recogniser writes them ("ten thirty", "five five five", "oh")."""
    out: list[str] = []
    i = 0
    while i < len(words):
        pair = " ".join(words[i:i + 2])
        # "ten thirty" for times; phone and order numbers (5+ digits) are said digit by digit
        if pair in _TENS and _is_time(words, i) and r.random() < 0.7:
            out.append(_TENS[pair])
            i += 2
            continue
        w = words[i]
        if w.isdigit():
            out.append("oh" if w == "0" and r.random() < 0.3 else _NUM_WORDS[int(w)])
        else:
            out.append(w)
        i += 1
    return out


def _is_time(w: list[str], i: int) -> bool:
    """The digit run at i is a clock time ("at 10 30", "10 30 am"), not a number or the half of one."""
    a = _run_start(w, i + 1)
    b = a + _run_len(w, a)
    return b - a < 5 and ((b < len(w) and w[b] in ("am", "pm")) or (a > 0 and w[a - 1] == "at"))


def add_noise(r: random.Random, text: str) -> str:
    """Recogniser-like damage: dropped, substituted and repeated words, fillers; the last word is kept."""
    w = normalize(text).split()
    if not w:
        return ""
    if r.random() < 0.4:
        w = _spoken_numbers(r, w)
    last, body = w[-1], w[:-1]
    out: list[str] = []
    for i, x in enumerate(body):
        p = r.random()
        if x.isdigit() or x in _NUM_WORDS or x == "oh":
            p = 1.0  # digits are kept: how many were said decides whether a number is finished
        if p < 0.04 and (out or i < len(body) - 1):
            # dropped, but never the whole body: "hello is this" must not shrink to "this", a stray
            # word, while two words of a request already make an interruption
            continue
        if p < 0.08:
            out.append(r.choice(_SUBSTITUTES))
        elif p < 0.10:
            out += [x, x]  # a stutter or a doubled recognition
        else:
            out.append(x)
        if r.random() < 0.03:
            out.append(r.choice(("um", "uh")))
    return " ".join(out + [last])


def misheard_ending(r: random.Random, text: str, broad: bool = False) -> str:
    """`text` with its last word misheard: a sound-alike, else the last word of another complete sentence; the
    new ending is never one of `CUT_WORDS` (module doc)."""
    w = text.split()
    if not w or _numeric(w[-1]):
        return text  # how many digits were said decides whether a number is finished: never touched

    def ok(end: str) -> bool:
        return end not in CUT_WORDS and not _numeric(end)

    alikes = [a for a in SOUND_ALIKE.get(w[-1], ()) if ok(a.split()[-1])]
    if alikes and r.random() < 0.5:
        return " ".join(w[:-1] + [r.choice(alikes)])
    for _ in range(10):
        other = normalize(_complete(r, "train", broad)[0]).split()
        if other and ok(other[-1]) and other[-1] != w[-1]:
            return " ".join(w[:-1] + [other[-1]])
    return text


def _numeric(word: str) -> bool:
    return word.isdigit() or word in _NUM_WORDS or word == "oh"


def _item(r: random.Random, task: str, split: str, last_word_slip: float = 0.0, broad: bool = False) -> DecisionExample:
    if task == "turn_complete":
        answer = r.random() < 0.5
        text, kind, ctx, novel = (_complete if answer else _incomplete)(r, split, broad)
        if answer and len(text.split()) > 1 and r.random() < last_word_slip:
            clean = normalize(text)
            slipped = misheard_ending(r, clean, broad)
            if slipped != clean:
                text, kind = slipped, "misheard_ending"
        elif broad and not answer and kind in ("preface", "cut_clause") and len(text.split()) > 1 and r.random() < last_word_slip:
            # the same slip on a preface or a clause: what makes it unfinished is its opening, which a
            # misheard last word does not change ("and so my fellow customers" as "... fellow costumes")
            text = misheard_ending(r, normalize(text), broad)
    else:
        answer = r.random() < 0.5
        text, kind, novel = (_interrupt if answer else _not_interrupt)(r, split)
        ctx = _bot_line(r) if r.random() < 0.7 else ""
    # short fixed phrases ("mm hmm", "the") are what a recogniser gives for them: light noise only
    noisy = add_noise(r, text) if len(text.split()) > 2 and r.random() < 0.7 else normalize(text)
    return DecisionExample(task, noisy, answer, kind, normalize(ctx), novel)


def generate(n: int, seed: int, split: str = "train", tasks: tuple[str, ...] = TASKS,
             last_word_slip: float = 0.0, broad: bool = False) -> list[DecisionExample]:
    """n labelled utterances, reproducible from the seed, tasks taking turns; `last_word_slip`: the share of
    complete turns whose last word is misheard; `broad`: the broad corpus (module doc; not the shipped model's)."""
    if not 0.0 <= last_word_slip <= 1.0:
        raise ValueError(f"last_word_slip {last_word_slip}: expected a share in [0, 1]")
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {SPLITS}")
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise ValueError(f"task {bad[0]!r}: expected one of {TASKS}")
    r = random.Random(seed)
    return [_item(r, tasks[i % len(tasks)], split, last_word_slip, broad) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description="Print labelled decision utterances as JSON lines.")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", choices=SPLITS, default="train")
    a = ap.parse_args()
    for u in generate(a.n, a.seed, a.split):
        print(json.dumps(asdict(u)))


if __name__ == "__main__":
    main()
