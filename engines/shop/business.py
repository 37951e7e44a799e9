"""Facts of the one fictional business the tiny engines are trained to serve.

Riverside Bike Works: a bicycle shop with a service workshop. Callers ask for opening hours,
the address, book / reschedule / cancel a service appointment, check a parts order, and chat.
The corpus generator (engines/shop/corpus.py) and the caller fixtures (audio_fixtures/) both read
these facts, so the callers ask what the engines can answer.
"""

from __future__ import annotations

SHOP = "Riverside Bike Works"
ADDRESS = "42 Harbor Lane"
CITY = "Millbrook"
LANDMARK = "next to the old train station"

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# opening hours per weekday, None = closed
HOURS: dict[str, tuple[str, str] | None] = {
    "monday": ("9 am", "6 pm"),
    "tuesday": ("9 am", "6 pm"),
    "wednesday": ("9 am", "6 pm"),
    "thursday": ("9 am", "8 pm"),
    "friday": ("9 am", "8 pm"),
    "saturday": ("10 am", "4 pm"),
    "sunday": None,
}
# appointment slots the workshop offers
TIMES = (
    "9 am", "9 30 am", "10 am", "10 30 am", "11 am", "11 30 am", "1 pm", "1 30 pm",
    "2 pm", "2 30 pm", "3 pm", "3 30 pm", "4 pm", "4 30 pm", "5 pm",
)
NAMES = (
    "anna", "ben", "carla", "david", "elena", "frank", "grace", "hugo", "irene", "jack",
    "karen", "leo", "maria", "nick", "olga", "peter", "quinn", "rosa", "sam", "tina",
    "umar", "vera", "will", "xena", "yusuf", "zoe", "alex", "bella", "chris", "diana",
    "ethan", "fiona", "george", "hannah", "ivan", "julia", "kevin", "laura", "mike", "nora",
)
SERVICES = ("a tune up", "a brake check", "a flat tire repair", "a gear adjustment", "a full service")
ORDER_STATUSES = ("is ready for pickup", "has shipped and arrives tomorrow", "is delayed until next week",
                  "is being packed today")
