"""A synthetic memory set with known topics (consolidation purity) and seeded conflict pairs."""

from __future__ import annotations

TOPICS: dict[str, list[str]] = {
    "running": [
        "Alice ran 10 kilometres along the river this morning.",
        "Alice is training for the Berlin marathon in September.",
        "Alice bought new running shoes with better cushioning.",
        "Alice's long run on Sunday felt easier than last week.",
        "Alice joined a running club that meets on Tuesday evenings.",
        "Alice's coach wants her to add interval sessions to her running.",
        "Alice hurt her knee slightly on a trail run.",
        "Alice set a personal best in the 5k race at the park.",
    ],
    "cooking": [
        "Alice baked sourdough bread for the first time.",
        "Alice made a big pot of lentil soup for the week.",
        "Alice is learning to cook Thai green curry from scratch.",
        "Alice burned the garlic while making pasta sauce.",
        "Alice bought a cast iron pan for searing vegetables.",
        "Alice tried a new recipe for vegetable lasagna.",
        "Alice's homemade pizza dough needs a longer proof.",
        "Alice roasted a tray of carrots with honey and thyme.",
    ],
    "work": [
        "Alice presented the quarterly budget to her manager.",
        "Alice's team is migrating the billing service to a new database.",
        "Alice has a performance review at the office next Friday.",
        "Alice stayed late at work to fix a production outage.",
        "Alice's manager asked her to lead the hiring for two engineers.",
        "Alice is writing the design document for the new API at work.",
        "Alice complained that meetings at work take her whole afternoon.",
        "Alice got positive feedback from her manager on the release.",
    ],
    "garden": [
        "Alice planted tomatoes and basil in her garden.",
        "Alice's roses in the garden are finally blooming.",
        "Alice spent Saturday pulling weeds from the vegetable beds.",
        "Alice built a compost bin at the back of the garden.",
        "Alice is worried that slugs are eating her lettuce.",
        "Alice watered the garden twice because of the heatwave.",
        "Alice harvested the first courgettes from her garden.",
        "Alice wants to plant an apple tree in the garden this autumn.",
    ],
    "guitar": [
        "Alice practised guitar chords for an hour.",
        "Alice is learning to play a Beatles song on her guitar.",
        "Alice's fingers hurt from pressing the guitar strings.",
        "Alice bought a new set of strings for her acoustic guitar.",
        "Alice takes guitar lessons every Wednesday with a teacher.",
        "Alice finally managed the barre chord on her guitar.",
        "Alice recorded herself playing guitar to hear her mistakes.",
        "Alice wants to play guitar at her sister's wedding.",
    ],
}

# (a, b, is_contradiction): contradictions by negation, numbers, dates and values, and
# paraphrases, elaborations and compatible facts about the same subject.
PAIRS: list[tuple[str, str, bool]] = [
    ("Bob lives in Paris.", "Bob lives in Berlin.", True),
    ("Bob's favourite colour is blue.", "Bob's favourite colour is green.", True),
    ("Bob eats meat.", "Bob does not eat meat anymore.", True),
    ("Bob has two children.", "Bob has three children.", True),
    ("Bob's birthday is on May 3rd.", "Bob's birthday is on June 5th.", True),
    ("Bob works at Google as an engineer.", "Bob works at Microsoft as an engineer.", True),
    ("Bob's dentist appointment is on Tuesday.", "Bob's dentist appointment is on Thursday.", True),
    ("Bob started learning the piano in 2019.", "Bob started learning the piano in 2021.", True),
    ("Bob loves jazz music.", "Bob hates jazz music.", True),
    ("Bob is married.", "Bob is divorced.", True),
    ("Bob drives a red Toyota.", "Bob drives a blue Toyota.", True),
    ("Bob's daughter is 7 years old.", "Bob's daughter is 9 years old.", True),
    ("Bob loves hiking in the mountains.", "Bob really enjoys hiking in the mountains.", False),
    ("Bob has a dog.", "Bob has a dog named Rex, a beagle.", False),
    ("Bob's sister lives in Porto.", "Bob's sister works as a nurse in Porto.", False),
    ("Bob drinks coffee every morning.", "Every morning Bob drinks a cup of coffee.", False),
    ("Bob plays tennis on weekends.", "On weekends Bob likes to play tennis with friends.", False),
    ("Bob is allergic to cats.", "Bob sneezes around cats because of an allergy.", False),
    ("Bob reads science fiction novels.", "Bob enjoys reading science fiction books.", False),
    ("Bob cycles to work.", "Bob commutes to his office by bicycle.", False),
    ("Bob's flat has a small balcony.", "Bob grows herbs on the small balcony of his flat.", False),
    ("Bob learned Spanish at school.", "Bob speaks Spanish, which he learned at school.", False),
]

# Written after the heuristics were fixed and never used to tune them: an honest check.
HOLDOUT_PAIRS: list[tuple[str, str, bool]] = [
    ("Carol's office is on the fourth floor.", "Carol's office is on the second floor.", True),
    ("Carol is a vegetarian.", "Carol is not a vegetarian.", True),
    ("Carol moved to Lisbon last year.", "Carol moved to Madrid last year.", True),
    (
        "Carol's wedding anniversary is on 12 August.",
        "Carol's wedding anniversary is on 20 October.",
        True,
    ),
    ("Carol owns 3 bicycles.", "Carol owns 5 bicycles.", True),
    ("Carol always takes the train to work.", "Carol never takes the train to work.", True),
    ("Carol's cat is called Miso.", "Carol's cat is called Tofu.", True),
    ("Carol prefers tea in the morning.", "Carol prefers coffee in the morning.", True),
    (
        "Carol swims at the public pool.",
        "Carol goes swimming at the public pool every week.",
        False,
    ),
    ("Carol studied chemistry at university.", "At university Carol studied chemistry.", False),
    ("Carol has a brother.", "Carol has a brother who lives in Canada.", False),
    ("Carol enjoys painting landscapes.", "Carol loves painting landscapes on weekends.", False),
    (
        "Carol volunteers at the animal shelter.",
        "Carol helps out at the local animal shelter.",
        False,
    ),
    ("Carol's car is electric.", "Carol charges her electric car at home.", False),
    ("Carol bakes bread on Sundays.", "Carol likes baking bread on Sundays.", False),
    ("Carol is learning Japanese.", "Carol takes Japanese lessons online.", False),
]
