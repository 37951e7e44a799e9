"""The out-of-domain evaluation set: callers the bike shop's engines must not answer with a tool call.

Three kinds, all expected to get the fallback or a short clarifying question:
- off-topic requests and unrelated sentences, written here by hand;
- in-domain requests half destroyed by the recogniser noise model (engines/shop/asr_noise.py): an
  essential word (a slot value or the intent's cue word) dropped or heard as a sound-alike;
- requests real callers said that earlier weights got wrong.

Disjoint from training (engines/shop/corpus.py) twice over: every sentence and request template here
is different from the corpus generator's, and the noise is drawn from a different seed. Plain
Python, no torch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engines.shop import business as B
from engines.shop.asr_noise import damage

OFF_TOPIC = (
    "can you recommend a good dentist", "i want to cancel my gym membership", "how much does a new roof cost",
    "do you deliver groceries", "can you fix a leaking tap", "i need a lawyer for my divorce",
    "is the swimming pool open", "can i order sushi for tonight", "where do i vote", "how do i reset my router",
    "can you change the oil in my motorbike", "do you cut keys", "i would like to book a massage",
    "can you babysit on saturday", "what is the price of petrol", "how do i get to the airport",
    "do you sell phone chargers", "can you tune my piano", "i need to renew my driving licence",
    "can you repair my watch", "what time does the bakery open", "can you book a table at the steak house",
    "do you do tax returns", "i want to return a jacket i bought online", "how many calories are in a banana",
    "could you play some music", "set an alarm for seven", "is there a cinema nearby",
    "can you call my wife", "what is the score of the football match", "i want a refund",
    "do you have vegan options", "can i speak to the hospital", "book me a train to london",
    "what is the exchange rate for euros", "how do i cook rice", "can you water my plants",
    "do you sell lottery tickets", "can you clean my windows", "i need a new passport photo",
)
UNRELATED = (
    "the river was very high after the storm", "my grandmother knits scarves for everyone",
    "we painted the bedroom blue last spring", "the bus was late again this morning",
    "i think the printer is out of paper", "he left his umbrella at the restaurant",
    "the cat sleeps on the warm laptop", "our team lost the quiz by one point",
    "she is learning to play the violin", "the soup needs a little more salt",
    "there is a strange noise in the attic", "i dreamt about a purple elephant",
    "the meeting went on for three hours", "my neighbour grows huge tomatoes",
    "the library closes early on holidays", "we watched the fireworks from the hill",
    "the baby finally fell asleep", "someone parked in front of my garage",
    "the coffee machine is broken", "i can never remember that password",
    "the garden looks lovely in the sun", "my brother moved to canada",
    "it smells like fresh bread in here", "the kids built a snowman",
    "the phone battery died during the call", "this song reminds me of school",
    "the mountains were covered in fog", "we ran out of milk yesterday",
    "my shoes are still wet from the rain", "the professor spoke very quickly",
    "a bird flew into the kitchen", "the train station is being renovated",
    "the keys were in my pocket all along", "he sings in the shower every day",
    "the paint is still drying", "they are building a new bridge downtown",
    "i spilled tea on the carpet", "the clock in the hall is five minutes fast",
    "the dog barked at the mailman", "summer holidays are too short",
)
# requests real callers said that earlier weights answered with a tool call
REAL = ("oh god you can only when it closed today", "will we ever forget it")

# in-domain requests phrased unlike any corpus template: (intent, template, the one cue word that
# makes the request; none where the slots alone carry it, e.g. a booking or an order number)
_REQUESTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("hours", "i was wondering what hours you keep on {day}", ("hours",)),
    ("hours", "until when are you open on {day}", ("open",)),
    ("hours", "is the shop open {day} afternoon", ("open",)),
    ("cancel", "i have to call off my {day} slot this is {name}", ("off",)),
    ("cancel", "{name} here please scrap my {day} appointment", ("scrap",)),
    ("cancel", "could you cancel the {day} visit for {name}", ("cancel",)),
    ("reschedule", "{name} speaking i want to shift my appointment to {day} at {time}", ("shift",)),
    ("reschedule", "could we move the visit for {name} to {day} {time}", ("move",)),
    ("book", "put me down for {service} {day} {time} name {name}", ()),
    ("book", "i would love {service} on {day} around {time} i am {name}", ()),
    ("order_status", "any news on my order {digits}", ()),
    ("order_status", "did order number {digits} arrive", ()),
)


@dataclass(frozen=True)
class OodPrompt:
    kind: str  # "off_topic", "unrelated", "garbled" or "real"
    text: str  # the caller's utterance; the expected reply is the fallback or a clarifying question


def garbled_requests(n: int, seed: int) -> list[OodPrompt]:
    """n in-domain requests, each with at least one essential word destroyed by the recogniser."""
    r = random.Random(seed)
    out: list[OodPrompt] = []
    for _ in range(n):
        intent, tpl, cues = r.choice(_REQUESTS)
        digits = " ".join(r.choice("0123456789") for _ in range(5))
        slots = {"day": r.choice(B.DAYS[:6]), "name": r.choice(B.NAMES), "time": r.choice(B.TIMES),
                 "service": r.choice(B.SERVICES), "digits": digits}
        text = tpl.format(**slots)
        # a booking without its name is answered by asking for the name, not garbled
        skip = {"service", "name"} if intent == "book" else {"service"}
        used = [v for k, v in slots.items() if "{" + k + "}" in tpl and k not in skip]
        # not essential: the minutes of "9 30 am" ("9 am" is still a valid time) and am/pm, which
        # also occur outside the slot ("i am anna") and whose loss leaves the hour readable
        essential = [w for v in used for w in v.split() if w not in ("30", "am", "pm")] + list(cues)
        out.append(OodPrompt("garbled", damage(text, r, essential)))
    return out


def ood_prompts(n_garbled: int = 120, seed: int = 14014) -> list[OodPrompt]:
    """The whole out-of-domain set: every hand-written sentence plus n_garbled noisy requests."""
    return ([OodPrompt("off_topic", t) for t in OFF_TOPIC] + [OodPrompt("unrelated", t) for t in UNRELATED]
            + [OodPrompt("real", t) for t in REAL] + garbled_requests(n_garbled, seed))
