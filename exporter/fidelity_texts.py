"""The fixed text sample on which an int8 encoder is compared with its fp32 source.

Written for this project. It mixes what quantization handles worst (tiny texts, lone
punctuation), everyday requests, support tickets, news-style and review-style sentences,
questions, non-ASCII text and long passages near the 256-token limit, so that a mean cosine
over it says something about every kind of input a user may send.
"""

_LONG_1 = (
    "I have been a customer for almost six years and this is the first time I have had to write in. "
    "Last Tuesday my order arrived with the box crushed on one corner, and when I opened it the "
    "glass panel of the cabinet was cracked straight across. I took photos before unpacking anything "
    "else, and I kept all the packaging in case the courier needs to see it. I called the helpline on "
    "Wednesday and was told someone would ring me back within two working days, but nobody did. "
    "Could you please arrange either a replacement panel or a collection and full refund? I work from "
    "home on Mondays and Thursdays, so a delivery or pickup on one of those days would suit me best."
)
_LONG_2 = (
    "The city council voted on Thursday evening to extend the pilot scheme that closes three central "
    "streets to cars during weekends, after a year in which footfall in local shops rose and air "
    "quality measurements improved at two of the four monitoring stations. Opponents argued that "
    "delivery drivers and residents with limited mobility had been left without practical "
    "alternatives, and the council agreed to add loading bays and a shuttle service before the "
    "extension begins in spring. A final decision on making the closure permanent is expected next "
    "autumn, once a full report on traffic displacement to neighbouring districts has been published."
)

FIDELITY_TEXTS: tuple[str, ...] = (
    "OK", "?", "!", "Thanks!", "hi", "yes", "no", "why?", "lol", "help", "cancel", "stop",
    "ok thanks bye", "not again...", "42", "3:15 pm",
    "Wake me up at 6:30 tomorrow.",
    "What's the weather like in Lisbon this weekend?",
    "Play something relaxing for a rainy afternoon",
    "Text Priya that I'm running ten minutes late",
    "How long does it take to drive to the airport right now?",
    "Move my dentist appointment to Friday morning",
    "Turn the living room lights down to thirty percent",
    "My password reset email never arrived.",
    "I was charged twice for the same subscription this month.",
    "The app crashes every time I try to upload a photo from my gallery.",
    "How do I change the delivery address on an order that has already shipped?",
    "Can I get an invoice with my company's VAT number on it?",
    "Please close my account and delete my data.",
    "Who wrote the novel that the film was based on?",
    "What is the boiling point of water at high altitude?",
    "When did the first person walk on the moon?",
    "Where is the tallest waterfall in South America?",
    "How many kilometres are there in a marathon?",
    "Shares in the chipmaker fell sharply after it cut its revenue forecast for the year.",
    "The home side scored twice in the last ten minutes to win the derby.",
    "Scientists have mapped the genome of a deep-sea fish that glows in the dark.",
    "Talks between the two governments resumed after a three-week pause.",
    "The battery easily lasts two days and the screen is bright even in sunlight.",
    "Terrible customer service, I waited forty minutes and then got cut off.",
    "A warm, funny film that never quite finds its ending.",
    "The plot is thin but the performances are wonderful.",
    "It does what it says, nothing more, nothing less.",
    "Absolutely the worst purchase I have made this year.",
    "Je voudrais réserver une table pour deux personnes ce soir.",
    "¿Dónde está la estación de tren más cercana?",
    "Die Lieferung kam zwei Tage zu spät an.",
    "東京の天気はどうですか",
    "Café au lait, crème brûlée and a naïve façade.",
    "Great job team 🎉🎉",
    "call mom 📞",
    "URGENT!!! server down since 03:00 UTC, error 502 on all endpoints",
    "re: re: fwd: meeting notes (final) v2",
    "def main(): return 0",
    "SELECT * FROM orders WHERE status = 'pending';",
    "https://example.com/reset?token=abc123",
    "the the the the the the the the",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    _LONG_1,
    _LONG_2,
    _LONG_1 + " " + _LONG_2,
)

#: Embedded by the exporter with the shipped encoder and stored in the bundle (encoder.check),
#: so a device can confirm at load that its inference engine computes the same embeddings.
#: Fixed public text, unrelated to any dataset: it carries no information about the records.
CHECK_TEXT = "Check: the quick brown fox jumps over the lazy dog near the river bank at 7:45 a.m."
