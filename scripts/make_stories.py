#!/usr/bin/env python3
"""Write storylm's own corpus: short, simple stories for small children.

    python3 scripts/make_stories.py                       # data/stories.txt, seed 1
    python3 scripts/make_stories.py --seed 7 --stories 500 --out /tmp/s.txt
    python3 scripts/make_stories.py --check data/stories.txt

Every story names its hero in the first sentence and brings the name back later,
at places where only the name fits ("said Lily.", "Lily, look!", "Lily's"), with
pronouns in between, because the chapter's experiments watch the network copy
that name. Heroes get common names (many stories each), rare names (a few
stories each) and invented names built from syllables (one or two stories each,
so that a 2,000-token WordPiece vocabulary cuts them into pieces).

Plain Python 3 standard library. Deterministic: the same seed gives the same
bytes (one random.Random, no iteration over sets, no hashing of strings).
Stories are separated by a line holding only <|endoftext|>.
"""

import argparse
import os
import random
import re
import sys

SEPARATOR = "<|endoftext|>"

# ---------------------------------------------------------------- names

# Common names, most frequent first: they get Zipf-like weights, so a few
# (Lily, Tom, Ben, Mia) are heroes of hundreds of stories.
COMMON_NAMES = [
    ("Lily", "f"), ("Tom", "m"), ("Ben", "m"), ("Mia", "f"), ("Max", "m"),
    ("Sue", "f"), ("Tim", "m"), ("Anna", "f"), ("Sam", "m"), ("Lucy", "f"),
    ("Jack", "m"), ("Emma", "f"), ("Sara", "f"), ("Bob", "m"), ("Amy", "f"),
    ("Leo", "m"), ("Kate", "f"), ("Jake", "m"), ("Zoe", "f"), ("Joe", "m"),
    ("Ella", "f"), ("Billy", "m"), ("Molly", "f"), ("Timmy", "m"),
    ("Rosie", "f"), ("Dan", "m"), ("Sally", "f"), ("Mark", "m"), ("Lisa", "f"),
    ("Ted", "m"), ("Jill", "f"), ("Nick", "m"), ("Grace", "f"), ("Jim", "m"),
    ("Kim", "f"), ("Pete", "m"), ("Jane", "f"), ("Luke", "m"), ("Ruby", "f"),
    ("Ollie", "m"), ("Meg", "f"), ("Tony", "m"),
]

# Rare names: each is the hero of only a few stories.
RARE_NAMES = [
    ("Fred", "m"), ("Opal", "f"), ("Hugo", "m"), ("Nell", "f"), ("Quinn", "f"),
    ("Bram", "m"), ("Ivy", "f"), ("Otis", "m"), ("Wren", "f"), ("Jude", "m"),
    ("Cleo", "f"), ("Gus", "m"), ("Ada", "f"), ("Enzo", "m"), ("Hazel", "f"),
    ("Jasper", "m"), ("Iris", "f"), ("Lars", "m"), ("Kira", "f"), ("Nico", "m"),
    ("Mabel", "f"), ("Odin", "m"), ("Pearl", "f"), ("Silas", "m"), ("Ruth", "f"),
    ("Wade", "m"), ("Tess", "f"), ("Zeke", "m"), ("Vera", "f"), ("Abe", "m"),
    ("Yara", "f"), ("Dex", "m"), ("Bea", "f"), ("Hank", "m"), ("Cora", "f"),
    ("Jonah", "m"), ("Edie", "f"), ("Oren", "m"), ("Flo", "f"), ("Saul", "m"),
    ("Gwen", "f"), ("Walt", "m"), ("Ida", "f"), ("Ezra", "m"), ("Nora", "f"),
    ("Rudy", "m"), ("Thea", "f"), ("Basil", "m"), ("Mina", "f"), ("Clem", "m"),
    ("Fern", "f"), ("Knox", "m"), ("Greta", "f"), ("Nils", "m"), ("Juno", "f"),
    ("Percy", "m"), ("Mavis", "f"), ("Arlo", "m"), ("Orla", "f"), ("Boris", "m"),
    ("Tilda", "f"), ("Emil", "m"), ("Una", "f"), ("Felix", "m"), ("Agnes", "f"),
    ("Linus", "m"), ("Maeve", "f"), ("Oscar", "m"), ("Dot", "f"), ("Rolf", "m"),
    ("Freya", "f"), ("Tobias", "m"), ("Hilda", "f"), ("Wilbur", "m"),
    ("Olive", "f"), ("Homer", "m"), ("Petra", "f"), ("Cyril", "m"),
    ("Selma", "f"), ("Ned", "m"), ("Zelda", "f"), ("Yuri", "m"), ("Lotte", "f"),
    ("Gideon", "m"), ("Inez", "f"), ("Stan", "m"), ("Delia", "f"), ("Vince", "m"),
]

# Names of pets that come along as the second character.
PET_NAMES = [
    ("Spot", "m"), ("Spot", "m"), ("Spot", "m"), ("Buddy", "m"), ("Rex", "m"),
    ("Fluffy", "f"), ("Kitty", "f"), ("Coco", "f"), ("Tiger", "m"),
    ("Snowy", "f"), ("Patch", "m"), ("Mittens", "f"), ("Lucky", "m"),
    ("Pip", "m"), ("Sparky", "m"), ("Boots", "m"), ("Daisy", "f"),
    ("Rusty", "m"), ("Bella", "f"), ("Socks", "m"),
]

# Invented names are built from these pieces: a first syllable, maybe a
# middle one, and an ending.
ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
          "br", "dr", "fl", "gl", "gr", "kl", "kr", "pl", "pr", "sn", "sk", "st",
          "tr", "vr", "zl", "th", "sh", "ch", "j", "y", "w", "h", "bl", "fr"]
VOWELS = ["a", "e", "i", "o", "u", "a", "o", "i", "oo", "ee", "ai", "ou"]
CODAS = ["", "", "", "", "n", "r", "l", "k", "m", "s", "x", "b", "g", "nd",
         "rk", "sh", "t", "v", "z", "mp", "lt"]
MIDDLES = ["ba", "li", "ro", "ma", "ne", "vo", "ti", "ka", "lu", "de", "zi",
           "po", "ra", "mi", "go", "sa", "fe", "nu"]
ENDINGS = ["ko", "vik", "ble", "lo", "ni", "ra", "zo", "bo", "ka", "ix", "ek",
           "ul", "am", "ora", "iko", "us", "el", "et", "ina", "ux", "ot", "op",
           "ip", "ax", "ep", "o", "a", "i", "ly", "by", "wick", "dor", "mo",
           "zel", "rin", "tov", "pa", "ley", "sy", "gum", "bert", "na", "wen"]
# Real words or names that the syllables happen to build (checked once
# against a word list; kept here so the script needs nothing but itself).
NOT_INVENTED = set("""
abbot aero allo amok anal arbo babka baku balsa banal bandy banjo barbi barra
bebop bingo bizarre blabby bobby bombo bongo boo booby bora borax boxy brandy
bravo brio broody burro cola cocoa coma como cora daddy dally darn demo derby
dido dingo disco ditto dodo dolly dorky dumbo ego emu falsy fandango faro
figaro flora fro garbo gecko gecco gismo gizmo gonna gorilla gotta gumbo gumby
gusto halo hippo hobo hokey hula hobby hubby hummus husky hydra jumbo jello
kappa karma kayo kiwi koala kudo lama lasso latte lego levi limbo lingo lobby
loco lolly lotto lulu mambo mango manna mocha mojo mona mocha motto nacho nana
nanny ninny nova oboe okra papa pasta patio perky pesky piano picky pinto
pizza plaza polka polo porky potato pumpkin puma rambo rodeo rumba saga salsa
samba santa sappy shabby shiny sicko silly soda sofa solo soya stucco sumo
tabby taco tango tardy tattoo telly tempo toga tofu tomato tuba tundra turbo
tutu umbra vanilla vega veto villa vista vodka voodoo wacko wimpy yoga yoyo
yucca yummy zany zebra zero zippy zombie zulu
""".split())


def invented_name(rng, used):
    """A new pronounceable name, 4-8 letters, never a word or a listed name."""
    while True:
        first = rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
        middle = rng.choice(MIDDLES) if rng.random() < 0.2 else ""
        word = first + middle + rng.choice(ENDINGS)
        if not 5 <= len(word) <= 7 or word in used or word in NOT_INVENTED:
            continue
        if re.search(r"(.)\1\1|[aeiou]{3}|[^aeiouy]{4}|^(.)\2", word):
            continue
        if any(pair not in ("oo", "ee", "ai", "ou", "ea", "oa")
               for pair in re.findall(r"(?=([aeiou]{2}))", word)):
            continue
        if not re.search(r"[aeiouy]", word[1:]):
            continue
        used.add(word)
        return word.capitalize()


def plan_names(rng, n):
    """(name, gender, class) for each of n stories: common, rare, invented."""
    n_invented = int(round(0.20 * n))
    n_rare = int(round(0.075 * n))
    plan = []
    rare = list(RARE_NAMES)
    rng.shuffle(rare)
    for name, gender in rare:     # each rare name is the hero of 2 to 8 stories
        if len(plan) >= n_rare:
            break
        plan.extend([(name, gender, "rare")] * rng.randint(2, 8))
    used = set(n.lower() for n, _ in COMMON_NAMES + RARE_NAMES + PET_NAMES)
    used |= set(w.lower() for ws in LISTS.values() for w in ws)
    invented = []
    while len(invented) < n_invented:
        name, gender = invented_name(rng, used), rng.choice("fm")
        uses = 2 if rng.random() < 0.35 else 1
        invented.extend([(name, gender, "invented")] * uses)
    plan.extend(invented[:n_invented])
    plan = plan[:n]
    weights = [1.0 / (rank + 2) ** 0.9 for rank in range(len(COMMON_NAMES))]
    while len(plan) < n:
        name, gender = rng.choices(COMMON_NAMES, weights)[0]
        plan.append((name, gender, "common"))
    rng.shuffle(plan)
    return plan


# ---------------------------------------------------------------- word lists

# Lists a template names as {list}: a fresh pick every time it appears.
LISTS = {
    "colour": ["red", "blue", "green", "yellow", "pink", "purple", "orange",
               "white", "brown", "gold"],
    "trait": ["happy", "kind", "curious", "brave", "shy", "silly", "playful",
              "clever", "sweet", "friendly", "gentle", "cheerful", "busy",
              "funny", "polite", "quiet", "smart", "helpful", "lively", "good"],
    "glad": ["happy", "glad", "so happy", "very happy", "excited"],
    "sad": ["sad", "very sad", "upset", "so sad", "unhappy"],
    "scared": ["scared", "afraid", "very scared", "frightened", "so scared"],
    "setting": ["small town", "little house near the woods", "big city",
                "quiet village", "cozy house by the sea", "green valley",
                "red house", "small house on a hill",
                "busy town", "little yellow house"],
    "wild": ["big green forest", "sunny meadow", "quiet pond", "tall old tree",
             "warm barn on a farm", "deep, dark wood", "field of flowers",
             "little hole under a tree"],
    "age": ["three", "four", "five", "six", "seven"],
    "act": ["play outside", "sing songs", "draw pictures", "jump in puddles",
            "read books", "build towers with blocks", "dance", "pick flowers",
            "look at the stars", "run and play", "blow bubbles", "paint",
            "play hide and seek", "dig in the sand", "chase butterflies",
            "climb trees", "make new friends", "splash in the water",
            "play games", "count the clouds", "help other people"],
    "wild_act": ["run in the grass", "hop in the field", "chase butterflies",
                 "play in the mud", "swim in the pond", "sleep in the sun",
                 "dig holes", "climb trees", "look for berries",
                 "roll down the hill", "sing in the morning"],
    "routine": ["played in the yard", "helped with the garden",
                "went for a walk", "read a book before bed",
                "said hello to everyone", "ran to the window to see the sun",
                "ate a big breakfast", "played with the toys in the box"],
    "dislike": ["baths", "loud noises", "rainy days", "green beans",
                "going to bed early", "the cold", "waiting"],
    "snack": ["some cookies", "a big red apple", "two bananas",
              "some cheese and bread", "a bowl of berries", "warm milk",
              "some grapes", "a piece of cake", "a jam sandwich"],
    "sky": ["The sun was shining and the sky was blue.",
            "The sun was warm and the birds were singing.",
            "It was a bright and sunny day.",
            "The wind was soft and the flowers were bright.",
            "There were white clouds in the big blue sky.",
            "It was a warm day and the grass was green."],
    "see": ["a big tree", "a little pond", "some tall flowers", "a red barn",
            "a small bridge", "a pretty butterfly", "a busy bee", "a fat cow",
            "an old wooden fence", "a family of ducks", "a shiny rock",
            "a long green snake", "a happy dog", "an orange cat"],
}

# Toys: (noun, adjectives that fit, what can happen to it)
TOYS = [
    ("ball", ["red", "blue", "big", "bouncy", "yellow", "green"], "roll throw stuck"),
    ("kite", ["red", "blue", "yellow", "green", "pink", "big"], "fly stuck"),
    ("doll", ["pretty", "old", "soft", "little", "new"], "hug break"),
    ("teddy bear", ["soft", "brown", "fluffy", "old", "little"], "hug"),
    ("toy car", ["red", "blue", "fast", "shiny", "little"], "roll break"),
    ("toy train", ["red", "green", "long", "shiny", "wooden"], "break"),
    ("toy boat", ["little", "red", "white", "wooden"], "float break"),
    ("truck", ["big", "yellow", "red", "toy"], "roll break"),
    ("robot", ["shiny", "silver", "little", "toy"], "break"),
    ("balloon", ["red", "blue", "big", "pink", "yellow"], "fly stuck"),
    ("hat", ["blue", "red", "big", "funny", "straw", "green"], "stuck wear"),
    ("drum", ["little", "red", "loud", "new"], "break"),
    ("yo-yo", ["red", "blue", "green", "shiny"], "throw"),
    ("bucket", ["red", "blue", "yellow", "little"], ""),
    ("frisbee", ["red", "blue", "orange", "yellow", "green"], "throw stuck"),
    ("toy plane", ["red", "white", "little", "shiny"], "fly stuck break"),
    ("scarf", ["warm", "red", "blue", "soft", "long"], "stuck wear"),
    ("book", ["big", "old", "new", "blue"], ""),
    ("bunny toy", ["soft", "white", "pink", "old"], "hug"),
    ("spinning top", ["red", "shiny", "little", "blue"], "break"),
    ("whistle", ["shiny", "silver", "little", "loud"], ""),
    ("crown", ["gold", "shiny", "paper", "pretty"], "wear"),
]

# Things a hero can find: (noun, adjectives)
FINDS = [
    ("shell", ["shiny", "pink", "white", "pretty", "big"]),
    ("stone", ["smooth", "shiny", "round", "white", "flat"]),
    ("feather", ["blue", "long", "soft", "white", "yellow"]),
    ("leaf", ["big", "red", "gold", "orange", "funny"]),
    ("key", ["old", "gold", "little", "shiny"]),
    ("coin", ["shiny", "gold", "old", "silver"]),
    ("box", ["little", "old", "red", "wooden"]),
    ("button", ["blue", "big", "shiny", "round"]),
    ("ring", ["gold", "shiny", "little", "silver"]),
    ("map", ["old", "funny", "big", "little"]),
    ("egg", ["blue", "little", "speckled", "white"]),
    ("acorn", ["big", "brown", "little", "round"]),
    ("marble", ["blue", "green", "shiny", "glass"]),
    ("pinecone", ["big", "brown", "little", "round"]),
    ("bell", ["little", "gold", "shiny", "silver"]),
]

# Places: (noun, "at the ..." phrase, outdoor hiding spots)
PLACES = [
    ("park", "at the park", ["under a bench", "behind a big tree", "under the slide", "in the tall grass"]),
    ("beach", "at the beach", ["in the sand", "behind a big rock", "under a towel", "near the water"]),
    ("garden", "in the garden", ["under a bush", "behind the flowers", "next to the shed", "under some leaves"]),
    ("woods", "in the woods", ["under a log", "behind a tree", "in a pile of leaves", "under a bush"]),
    ("pond", "by the pond", ["in the reeds", "under a big leaf", "behind a rock", "in the mud"]),
    ("playground", "at the playground", ["under the slide", "behind the swings", "in the sandbox", "under a bench"]),
    ("meadow", "in the meadow", ["in the tall grass", "under a bush", "behind a rock", "near the flowers"]),
    ("hill", "on the hill", ["behind a rock", "in the tall grass", "under a tree", "near the top"]),
    ("lake", "by the lake", ["near the water", "under a tree", "behind a boat", "in the grass"]),
    ("farm", "on the farm", ["in the hay", "behind the barn", "next to the pigs", "under the cart"]),
    ("yard", "in the yard", ["under the steps", "behind the fence", "in the grass", "under a bush"]),
    ("river", "by the river", ["between two rocks", "under a tree", "in the grass", "near the bridge"]),
]

HOME_SPOTS = ["under the bed", "behind the couch", "in the toy box", "under a pillow",
              "behind the door", "under the table", "in the closet", "next to the bath"]

# Hero kinds: children and animals, with the place an animal lives.
CHILD_KINDS = {"f": ["girl", "little girl", "girl"], "m": ["boy", "little boy", "boy"]}
ANIMAL_KINDS = ["dog", "cat", "bunny", "bear", "fox", "mouse", "duck", "frog",
                "bird", "puppy", "kitten", "pig", "lamb", "squirrel", "owl",
                "turtle", "monkey", "elephant", "hen", "goat"]

# Animals that need help: (noun, what is wrong, what makes it right)
NEEDY = [
    ("bird", "had a hurt wing and could not fly",
     "put the bird in a soft box and gave it water. After a few days, its wing was better"),
    ("baby bird", "had fallen out of its nest",
     "gently put the baby bird back in its nest. Its mother sang a happy song"),
    ("kitten", "was stuck up in a tree and was crying",
     "brought a ladder, and the kitten climbed down into safe arms"),
    ("puppy", "was lost and could not find its home",
     "read the name on its collar and walked the puppy back to its house"),
    ("duckling", "was lost and could not find its mother",
     "walked the duckling to the pond, where its mother was waiting"),
    ("turtle", "was stuck on its back and could not turn over",
     "gently turned the turtle over, and it walked away slowly"),
    ("bunny", "was caught in a fence",
     "carefully pulled the wire open, and the bunny hopped free"),
    ("butterfly", "had wet wings and could not fly",
     "held the butterfly in the sun until its wings were dry"),
    ("hedgehog", "was cold and hungry",
     "gave the hedgehog some food and a warm blanket"),
    ("frog", "was stuck in an empty bucket",
     "tipped the bucket over, and the frog hopped back to the pond"),
    ("lamb", "was lost in the field",
     "walked the lamb back to the farm, where its mother was waiting"),
    ("squirrel", "had its tail stuck under a branch",
     "lifted the heavy branch, and the squirrel ran up a tree"),
]

MORALS = {
    "lost": ["friends help each other", "it is good to look carefully",
             "it is good to have a friend who helps"],
    "stuck": ["it is okay to ask for help", "two friends can do more than one",
              "it is good to ask for help when something is hard"],
    "broken": ["things can be fixed with love", "saying sorry makes things better",
               "it is good to be careful with your toys"],
    "share": ["sharing is caring", "it is more fun to play together",
              "sharing makes everyone happy"],
    "help_animal": ["being kind is always good", "it feels good to help others",
                    "even small animals need help sometimes"],
    "fear": ["being brave can be fun", "new things are not always scary",
             "a friend can make you brave"],
    "disobey": ["it is important to listen to mom and dad",
                "it is good to listen", "rules keep us safe"],
    "gift": ["giving is as fun as getting", "a gift from the heart is the best gift",
             "making others happy makes you happy too"],
    "new_friend": ["it is good to say hello", "new friends can be the best friends",
                   "being friendly is easy"],
    "garden": ["good things take time", "waiting can be worth it",
               "taking care of things helps them grow"],
    "weather": ["there is always something fun to do",
                "a rainy day can be a happy day"],
    "race": ["playing together is better than winning",
             "helping a friend is more important than winning"],
    "hide": ["playing with a friend is the best fun", "a good game makes a good day"],
    "trip": ["every day can be an adventure", "family makes a trip fun"],
    "wish": ["good things come to those who wait",
             "working hard pays off", "it is nice to be patient"],
    "noise": ["things are not always as scary as they seem",
              "it is good to look before you get scared"],
    "learn": ["practice makes things easier", "you should never give up",
              "trying again and again helps"],
    "bake": ["cooking together is fun", "sharing food makes it taste better"],
    "clean": ["a clean room is a happy room", "helping at home is good"],
    "find": ["little things can be special", "it is fun to share what you find"],
    "snow": ["winter can be lots of fun", "a warm home is the best after a cold day"],
    "sick": ["family takes care of you", "rest helps you get better"],
    "magic": ["there is no place like home", "the best magic is a happy home"],
    "visit": ["family is a gift", "old people have the best stories"],
    "lost_child": ["it is important to stay close", "it is okay to ask for help"],
    "cheer": ["a good friend can make you smile", "kindness can fix a sad day"],
    "party": ["a party is about friends, not things", "a little trouble cannot spoil a happy day"],
}


# ---------------------------------------------------------------- a wide vocabulary
# A language model trained on this file must meet many words, as in real
# children's stories, so that a 2,000-token vocabulary holds the common words
# and cuts the invented names into pieces. These lists feed descriptive
# sentences ("flavour") woven into every story.


def words(text):
    return [w.strip() for w in text.split(",") if w.strip()]


IRREGULAR = {"mouse": "mice", "sheep": "sheep", "fish": "fish", "deer": "deer",
             "goose": "geese", "moose": "moose", "wolf": "wolves", "calf": "calves",
             "leaf": "leaves", "starfish": "starfish", "goldfish": "goldfish",
             "jellyfish": "jellyfish", "octopus": "octopuses", "child": "children",
             "loaf": "loaves", "shelf": "shelves", "scarf": "scarves",
             "potato": "potatoes", "tomato": "tomatoes", "mango": "mangoes"}


def plural(noun):
    """'cat' -> 'cats', 'berry' -> 'berries', 'fox' -> 'foxes', 'polar bear' -> 'polar bears'."""
    head, _, last = noun.rpartition(" ")
    if last in IRREGULAR:
        last = IRREGULAR[last]
    elif last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    else:
        last += "s"
    return (head + " " + last).strip()


# Animals: noun, how it moves (past tense), what it says.
ANIMALS = [(a.split(":")[0], a.split(":")[1], a.split(":")[2]) for a in words("""
    ant:marched:nothing, bee:buzzed:buzz, bird:flew:tweet, butterfly:fluttered:nothing,
    cat:walked:meow, caterpillar:crawled:nothing, chick:hopped:cheep, chicken:ran:cluck,
    cow:walked:moo, crab:scuttled:nothing, crow:flew:caw, deer:ran:nothing,
    dog:ran:woof, dolphin:swam:nothing, donkey:trotted:hee-haw, dragonfly:zoomed:nothing,
    duck:waddled:quack, eagle:flew:nothing, elephant:stomped:nothing, fish:swam:nothing,
    fox:ran:nothing, frog:hopped:ribbit, giraffe:walked:nothing, goat:trotted:maa,
    goose:waddled:honk, hamster:scurried:squeak, hedgehog:shuffled:nothing,
    hen:ran:cluck, hippo:waddled:nothing, horse:galloped:neigh, kangaroo:hopped:nothing,
    kitten:pounced:mew, koala:walked:nothing, ladybug:crawled:nothing, lamb:skipped:baa,
    lion:walked:roar, lizard:ran:nothing, mole:crept:nothing, monkey:swung:ooh-ooh,
    mouse:scurried:squeak, otter:swam:nothing, owl:flew:hoot, panda:rolled:nothing,
    parrot:flew:hello, peacock:strutted:nothing, penguin:waddled:nothing, pig:trotted:oink,
    pigeon:flew:coo, pony:trotted:neigh, puppy:ran:woof, rabbit:hopped:nothing,
    raccoon:crept:nothing, robin:flew:tweet, seal:slid:nothing, sheep:walked:baa,
    snail:crawled:nothing, snake:slid:hiss, sparrow:flew:chirp, spider:crawled:nothing,
    squirrel:scampered:nothing, swan:glided:nothing, tiger:walked:roar, toad:hopped:croak,
    turtle:crawled:nothing, whale:swam:nothing, wolf:ran:howl, worm:wiggled:nothing,
    zebra:galloped:nothing, beaver:swam:nothing, bat:flew:nothing, camel:walked:nothing,
    beetle:crawled:nothing, bear:walked:growl, calf:trotted:moo, crocodile:swam:nothing,
    flamingo:strutted:nothing, gorilla:walked:nothing, pelican:flew:nothing,
    polar bear:walked:nothing, reindeer:trotted:nothing, rooster:strutted:cock-a-doodle-doo,
    woodpecker:flew:tap-tap, goldfish:swam:nothing,
    grasshopper:jumped:nothing, firefly:flew:nothing, moth:fluttered:nothing,
    badger:trotted:nothing, ostrich:ran:nothing, rhino:stomped:nothing, yak:walked:nothing
""")]

# Animals met only in books, zoos and dreams, not walking past in the park.
EXOTIC = set(words("""dolphin, elephant, giraffe, hippo, kangaroo, koala, lion, monkey,
    panda, peacock, penguin, tiger, whale, zebra, camel, crocodile, flamingo, gorilla,
    pelican, polar bear, reindeer, ostrich, rhino, yak, seal, eagle, wolf, bear"""))

FOODS = words("""apple, banana, pear, peach, plum, orange, lemon, cherry, grape, strawberry,
    blueberry, raspberry, carrot, potato, tomato, cucumber, pumpkin, melon, watermelon,
    pineapple, mango, cookie, cupcake, muffin, cake, pie, pancake, waffle, sandwich,
    pizza, biscuit, cracker, pretzel, donut, bagel, sausage, egg, bun, lollipop,
    jelly bean, candy cane, gingerbread man, peanut, walnut, almond, cherry tomato,
    olive, coconut, apricot, fig, meatball, dumpling, nectarine, tangerine,
    corn cob, sweet roll, cinnamon bun, tart, rice cake, fish cake, oatmeal cookie,
    marshmallow, gumdrop, toffee, cheese stick""")
FOOD_MASS = words("""soup, bread, cheese, honey, jam, rice, milk, juice, ice cream, popcorn,
    yogurt, porridge, cereal, lemonade, cocoa, butter, salad, pasta, chocolate, toast,
    spaghetti, oatmeal, pudding, jelly, applesauce, cornbread, stew, broth, fruit salad,
    peanut butter, maple syrup, whipped cream, cheesecake, fudge, caramel""")

# Small things a child keeps in a box; toys and gifts; things found outdoors.
SMALL_THINGS = words("""marble, stone, shell, button, sticker, bead, crayon, feather, acorn,
    pinecone, coin, key, toy car, stamp, card, ribbon, leaf, bottle cap, pebble, seashell,
    bell, ring, whistle, puzzle piece, toy soldier, block, magnet, bouncy ball, paper star,
    tiny doll, toy dinosaur, glass bead, hair clip, postcard, spinning top, rubber duck,
    pencil, eraser, chalk stick, toy animal, clothespin, paper crane, cork, thimble""")
GIFT_THINGS = words("""kite, ball, drum, flute, book, doll, puzzle, robot, teddy bear,
    music box, jack-in-the-box, rocking horse, puppet, telescope, globe, pinwheel,
    scooter, tricycle, sled, backpack, paint set, umbrella, lantern, crown, wand, cape,
    mask, toy boat, toy train, xylophone, harmonica, tambourine, kaleidoscope,
    snow globe, fishing rod, wagon, compass, magnifying glass, bicycle bell, toy piano,
    guitar, trumpet, violin, storybook, coloring book, dollhouse, fire truck,
    toy rocket, tea set, bubble wand, jump rope, hula hoop, yo-yo, tent, raincoat,
    butterfly net, bird feeder, watering can, sandcastle bucket, stuffed bunny,
    toy tractor, toy airplane, wooden horse, clay pot, picture book, chalkboard""")
NATURE_THINGS = words("""rock, stick, leaf, feather, shell, pebble, acorn, pinecone, twig,
    flower petal, seed pod, snail shell, chestnut, smooth stone, bird feather, maple leaf,
    oak leaf, walnut shell, white stone, piece of bark, empty nest, round seed""")

PLANTS = words("""flower, tree, bush, mushroom, fern, daisy, rose, tulip, sunflower, weed,
    reed, vine, clover, dandelion, lily, oak tree, pine tree, apple tree, willow,
    cactus, bluebell, buttercup, poppy, violet, lavender bush, strawberry plant,
    pumpkin vine, bean plant, birch tree, maple tree, palm tree, berry bush""")

ADJECTIVES = words("""big, small, tiny, little, fluffy, furry, fuzzy, spotted, striped,
    friendly, sleepy, busy, happy, grumpy, silly, brave, clever, wise, proud, lucky,
    playful, curious, shy, chatty, sneaky, speedy, lazy, hungry, thirsty, gentle, noisy,
    quiet, jolly, plump, chubby, skinny, giant, young, old, muddy, cheeky, funny, pretty,
    lovely, beautiful, kind, cute, bold, nervous, dizzy, bouncy, tired, hairy, smart,
    sweet, calm, wild, proud, cheerful, bright, fancy, colorful, polite, helpful""")

COLOURS = words("""red, blue, green, yellow, pink, purple, orange, white, black, brown,
    gray, gold, silver, teal, lilac, cream, navy, scarlet, turquoise, violet""")

FEELINGS = words("""sleepy, tired, grumpy, bored, lonely, nervous, shy, silly, worried,
    puzzled, restless, cranky, gloomy, sad, quiet""")

ADVERBS = words("""quickly, slowly, happily, carefully, quietly, softly, proudly, eagerly,
    calmly, busily, lazily, sleepily, cheerfully, playfully, silently, merrily""")

# Adjectives that suit any thing, and any plant.
THING_ADJECTIVES = words("""big, small, tiny, little, round, shiny, sparkly, bright, colorful,
    striped, spotted, dotted, old, new, clean, heavy, funny, strange, special, pretty,
    lovely, beautiful, fancy, magic, secret, favorite, precious, twinkly, glittery,
    dusty, giant, wobbly, huge, odd, neat, plain, painted, lucky, shabby, grand""")
PLANT_ADJECTIVES = words("""tall, little, pretty, green, old, big, young, tiny, bright,
    lovely, wild, leafy, strong, thin, lonely, happy, sunny""")
GOOD_FEELINGS = words("""happy, glad, cheerful, joyful, proud, calm, rested, thankful,
    hopeful, peaceful, eager, jolly, cozy, excited, brave""")

JOBS = words("""doctor, teacher, farmer, baker, pilot, painter, builder, vet, firefighter,
    singer, dancer, cook, zookeeper, astronaut, gardener, sailor, artist, nurse,
    bus driver, mail carrier, fisherman, scientist, librarian, clown, ballerina,
    police officer, train driver, dentist, carpenter, beekeeper, explorer, inventor""")

CLOTHES = words("""hat, coat, scarf, dress, shirt, sweater, jacket, cap, raincoat, skirt,
    vest, cape, apron, bow tie, hoodie, nightgown, bathrobe, tutu, cardigan""")

SMELLS = words("""fresh grass, warm bread, flowers, rain, the sea, pine trees, cookies,
    honey, oranges, wet leaves, hot soup, roses, clean sheets, apple pie, the summer wind,
    popcorn, wood smoke, strawberries, mint, cinnamon""")

SOUNDS = words("""rain on the roof, birds in the morning, the wind in the trees,
    the waves at the beach, a ticking clock, a cat purring, bells ringing,
    frogs singing at night, leaves crunching, a train far away, a river running,
    bees buzzing, a kettle whistling, soft music, crickets at night""")

DAYS = words("Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday")
SEASONS = [("spring", "plant flowers"), ("summer", "swim in the lake"),
           ("fall", "jump in piles of leaves"), ("winter", "build a snowman"),
           ("spring", "splash in puddles"), ("summer", "eat cold watermelon"),
           ("fall", "pick apples"), ("winter", "go sledding")]
NUMBERS = words("two, three, four, five, six, seven, eight, nine, ten, eleven, twelve")
FAMILY = words("mom, dad, grandma, grandpa, aunt, uncle, nana, granny")
SKY_SHAPES = words("""a sleeping cat, a big boat, a rabbit with long ears, a giant shoe,
    a flying fish, a castle, an elephant, a fluffy sheep, a teapot, a dragon, a bear,
    a bird with big wings, a smiling face, a whale, an ice cream cone""")


def bind_flavour(s):
    """Words for the flavour sentences of one story, picked fresh each time."""
    animal, move, sound = s.pick([a for a in ANIMALS if a[0] not in EXOTIC])
    animal2 = s.pick([a for a in ANIMALS if a[0] not in EXOTIC])[0]
    wild = s.pick(ANIMALS)[0]
    food, food2 = s.pick(FOODS), s.pick(FOODS)
    small, gift = s.pick(SMALL_THINGS), s.pick(GIFT_THINGS)
    season, season_act = s.pick(SEASONS)
    s.v.update(
        f_animal=animal, f_animals=plural(animal), f_move=move,
        f_wild=wild, f_wilds=plural(wild),
        f_sound=sound.capitalize(), f_animal2s=plural(animal2),
        f_foods=plural(food), f_foods2=plural(food2), f_food=food,
        f_mass=s.pick(FOOD_MASS), f_thing=gift, f_gifts=plural(s.pick(GIFT_THINGS)),
        f_things=plural(small), f_nat=s.pick(NATURE_THINGS), f_plants=plural(s.pick(PLANTS)),
        f_plant=s.pick(PLANTS), f_season=season, f_season_act=season_act,
        f_day=s.pick(DAYS), f_job=s.pick(JOBS), f_clothes=s.pick(CLOTHES),
        f_smell=s.pick(SMELLS), f_sound_of=s.pick(SOUNDS), f_num=s.pick(NUMBERS),
        f_family=s.pick(FAMILY), f_shape=s.pick(SKY_SHAPES))


FLAVOUR_LIFE = [
    "{H} liked {f_foods} and {f_foods2} best of all.",
    "{HP} favorite food was {f_mass} with {f_foods}.",
    "{H} had {a:tadj} {colour2} {f_clothes} that {he} wore almost every day.",
    "On {f_day}s, {H} liked to help {his} {f_family} make {f_mass}.",
    "In the {f_season}, {H} liked to {f_season_act}.",
    "When {H} grew up, {he} wanted to be {a:f_job}.",
    "{HP} favorite animal was the {f_wild}, because it was so {adj}.",
    "Every night, {his} {f_family} read {him} a story about {a:adj} {f_wild}.",
    "{H} loved the sound of {f_sound_of}.",
    "{HP} room had {a:colour2} bed, {a:tadj} lamp and a box full of {f_things}.",
    "{H} kept {f_num} {tadj} {f_things} in a box by {his} bed.",
    "{H} liked to draw {f_wilds} and {f_plants} with {his} {colour2} crayon.",
    "{HP} {f_family} had given {him} {a:tadj} {f_thing} for {his} birthday.",
    "{H} knew a funny song about {f_num} {adj} {f_animals}.",
    "Some days {H} felt {feeling}, and some days {he} felt {good}.",
]

FLAVOUR_SCENE = [
    "There were {padj} {f_plants} and {adj} {f_animals} everywhere.",
    "{a:adj} {f_animal} {f_move} past.",
    "The air smelled like {f_smell}.",
    "Up in the sky, a cloud looked like {f_shape}.",
    "{H} stopped to look at {a:padj} {f_plant}.",
    "On the way, {H} counted {f_num} {f_animals} and {f_num2} {f_animal2s}.",
    "{H} picked up {a:tadj} {f_nat} and looked at it {adverb}.",
    "Somewhere nearby, {a:f_animal} was making a funny noise.",
    "{H} {walked} {adverb} along the path.",
    "Near {a:padj} {f_plant}, {H} saw {a:adj} {f_animal}.",
]

FLAVOUR_SOUND = [
    '{a:f_animal} looked up and said, "{f_sound}!"',
    '"{f_sound}!" said {a:adj} {f_animal}, and {H} laughed.',
]

FLAVOUR_FOOD = [
    "{H} stopped to eat {f_foods} and drink some {drink}.",
    "For lunch, {H} had {f_mass} and {a:f_food}.",
    "{H} had brought {f_foods} and shared them.",
    "Later, {H} had {f_mass} and {f_foods2} for a snack.",
]

FLAVOUR_END = [
    "That night, {H} dreamed of {adj} {f_wilds} and {tadj} {f_gifts}.",
    "Before bed, {H} told {his} {f_family} all about {his} day.",
    "Later, {H} drew a picture of the day with {his} {colour2} crayon.",
    "{H} fell asleep with {his} {tadj} {f_thing} next to {him}.",
    "The next morning, {H} woke up feeling {good} and {good2}.",
]

FLAVOUR_LISTS = {
    "adj": ADJECTIVES, "tadj": THING_ADJECTIVES, "padj": PLANT_ADJECTIVES,
    "colour2": COLOURS, "feeling": FEELINGS, "good": GOOD_FEELINGS,
    "good2": GOOD_FEELINGS, "adverb": ADVERBS, "f_num2": NUMBERS,
    "walked": words("walked, skipped, hopped, wandered, strolled, marched, ran, tiptoed"),
    "drink": words("water, milk, juice, lemonade, cocoa, apple juice, warm tea"),
}


def scene(s):
    """A few words about where the hero is: the sky, what is around, a snack."""
    s.maybe(0.4, "{sky}")
    flavour(s, "scene", 0.7)
    flavour(s, "scene", 0.35)
    flavour(s, "food", 0.25)


def flavour(s, kind, p=0.5):
    """Maybe one descriptive sentence of the given kind."""
    if not s.chance(p):
        return
    if "f_animal" not in s.v:
        bind_flavour(s)
    sounds = FLAVOUR_SOUND if s.v["f_sound"] != "Nothing" else []
    pools = {"life": FLAVOUR_LIFE, "scene": FLAVOUR_SCENE + sounds,
             "food": FLAVOUR_FOOD, "end": FLAVOUR_END}
    s.add(pools[kind])


# ---------------------------------------------------------------- characters

PRONOUNS = {
    "f": {"he": "she", "him": "her", "his": "her", "himself": "herself"},
    "m": {"he": "he", "him": "him", "his": "his", "himself": "himself"},
    "n": {"he": "it", "him": "it", "his": "its", "himself": "itself"},
}


class Char:
    """A person or animal of the story and how it has been referred to so far."""

    def __init__(self, name, gender, kind, role, title=None):
        self.name = name        # "Lily", "Spot", or None ("the bird", "Mom")
        self.gender = gender    # "f", "m" or "n"
        self.kind = kind        # "girl", "dog", "mom", "bird", ...
        self.role = role        # hero, friend, sibling, pet, parent, animal
        self.title = title      # "Mom", "Grandpa": what a child calls them
        self.since = 99         # pronoun references since the last name
        self.introduced = False # a named character is introduced once
        self.gap = 1            # pronoun references allowed before the name

    def pron(self, case):
        return PRONOUNS[self.gender][case]

    @property
    def relation(self):
        """How the hero would introduce them: 'friend', 'little sister', 'dog'."""
        if self.role in ("sibling", "pet"):
            return self.kind
        return "friend"

    @property
    def talks(self):
        return self.role != "pet"


def article(phrase):
    """'a' or 'an' for the phrase that follows."""
    word = phrase.split()[0].lower()
    if word.startswith(("uni", "use", "one", "eu")):
        return "a"
    if word.startswith(("hour", "honest")):
        return "an"
    return "an" if word[0] in "aeiou" else "a"


# ---------------------------------------------------------------- the story

TAG = re.compile(r"\{(a:)?([A-Za-z_0-9]+)\}")
HERO_TAGS = {"he", "him", "his", "himself"}
OTHER_TAGS = {"ohe": "he", "ohim": "him", "ohis": "his", "ohimself": "himself"}


class Story:
    """One story being written: its characters, bound words and paragraphs."""

    def __init__(self, rng, hero, other):
        self.rng = rng
        self.hero = hero
        self.o = other
        self.last = None            # character referred to most recently
        self.v = {}                 # words bound for the whole story
        self.paras = [[]]
        self.used_plots = []        # plots already told, not told twice
        self.seen = {}              # words picked from each list so far

    # -- random helpers
    def pick(self, items):
        return self.rng.choice(items)

    def fresh(self, name, items):
        """A pick from a word list, not one this story already used there."""
        seen = self.seen.setdefault(name, [])
        unused = [w for w in items if w not in seen] or items
        word = self.pick(unused)
        seen.append(word)
        return word

    def chance(self, p):
        return self.rng.random() < p

    # -- references to characters
    def label(self, c, case="subj"):
        """A character by name: 'Lily', 'Spot', 'Mom' / 'her mom', 'the bird'."""
        if c.name and c.role != "hero" and not c.introduced:
            base = self.owner() + " " + c.relation + " " + c.name
            c.introduced = True
        elif c.name:
            base = c.name
        elif c.title and self.chance(0.4):
            base = c.title
        elif c.title:
            base = self.owner() + " " + c.kind
        else:
            base = "the " + c.kind
        c.since, c.gap = 0, self.pick([1, 2, 2, 3, 3, 4])
        self.last = c
        return base + "'s" if case == "poss" else base

    def owner(self):
        """'her' or 'Lily's' before 'mom': the pronoun if the hero was just named."""
        if self.last is self.hero:
            return self.pronoun(self.hero, "poss")
        return self.ref(self.hero, "poss")

    def vocative(self, c):
        """What a speaker calls a character: 'Lily', 'Mom', 'little bird'."""
        if c.name:
            return c.name
        if c.title:
            return c.title
        return "little " + c.kind.replace("baby ", "")

    def pronoun(self, c, case):
        c.since += 1
        self.last = c
        word = {"subj": "he", "obj": "him", "poss": "his"}.get(case, case)
        return c.pron(word)

    def ref(self, c, case):
        """Name or pronoun, whichever a careful writer would use here."""
        clash = (self.last is not None and self.last is not c
                 and self.last.gender == c.gender)
        if c.since >= c.gap or clash:
            return self.label(c, case)
        return self.pronoun(c, case)

    # -- rendering templates
    def tag(self, name):
        """The words for one {tag} of a template.

        Hero: N name, Ns "Lily's", he/him/his/himself pronouns, H/HO/HP name
        or pronoun (subject, object, possessive). Other character: O, Os, Ov
        (what the hero calls them), Oname (introduces them), ohe/ohim/ohis/
        ohimself, OH/OO/OP, okind. Anything else: a word bound for the story
        (s.v) or a fresh pick from a word list."""
        h, o = self.hero, self.o
        if name == "N":
            return self.label(h)
        if name == "Ns":
            return self.label(h, "poss")
        if name in HERO_TAGS:
            self.last = h
            return h.pron(name)
        if name in ("H", "HO", "HP"):
            return self.ref(h, {"H": "subj", "HO": "obj", "HP": "poss"}[name])
        if name == "O":
            return self.label(o)
        if name == "Os":
            return self.label(o, "poss")
        if name == "Ov":
            return self.vocative(o)
        if name in OTHER_TAGS:
            self.last = o
            return o.pron(OTHER_TAGS[name])
        if name in ("OH", "OO", "OP"):
            return self.ref(o, {"OH": "subj", "OO": "obj", "OP": "poss"}[name])
        if name == "Oname":
            o.introduced = True
            self.last = o
            o.since = 0
            return o.name
        if name == "okind":
            return o.kind
        if name.startswith("f_") and name not in self.v:
            bind_flavour(self)
        if name in self.v:
            return self.expand(self.v[name])
        if name in LISTS:
            return self.expand(self.fresh(name, LISTS[name]))
        if name in FLAVOUR_LISTS:
            return self.fresh(name, FLAVOUR_LISTS[name])
        raise KeyError("template names unknown word {%s}" % name)

    def expand(self, template):
        """Fill in every {tag}, left to right (bound words may hold tags too)."""
        def one(m):
            word = self.tag(m.group(2))
            return article(word) + " " + word if m.group(1) else word
        return TAG.sub(one, template)

    def render(self, template):
        text = self.expand(template)
        text = re.sub(r"\^(\W*)(\w)", lambda m: m.group(1) + m.group(2).upper(), text)
        text = re.sub(r'(^|[\s(])"([a-z])', lambda m: m.group(1) + '"' + m.group(2).upper(), text)
        text = re.sub(r'([.!?] )([a-z])', lambda m: m.group(1) + m.group(2).upper(), text)
        return text[0].upper() + text[1:]

    def add(self, choice):
        """Append one sentence (or a few); a list means: pick one of them."""
        template = self.pick(choice) if isinstance(choice, list) else choice
        self.paras[-1].append(self.render(template))

    def maybe(self, p, choice):
        if self.chance(p):
            self.add(choice)

    def para(self):
        """Start a new paragraph; a paragraph often opens with the hero's name."""
        if self.v.pop("no_para", None):
            return
        if self.paras[-1]:
            self.paras.append([])
        if self.chance(0.6):
            self.hero.since = 99

    def say(self, talking, otherwise):
        """A line for the other character: spoken if it talks, else an action."""
        self.add(talking if self.o.talks else otherwise)

    def text(self):
        return "\n".join(" ".join(p) for p in self.paras if p)


# ---------------------------------------------------------------- binding words

def bind_toy(s, need=""):
    """The hero's toy: {obj} 'kite', {objd} 'red kite'."""
    toys = [t for t in TOYS if need in t[2].split()] if need else TOYS
    noun, adjs, _ = s.pick(toys)
    s.v["obj"] = noun
    s.v["objd"] = s.pick(adjs) + " " + noun if s.chance(0.8) else noun


def bind_place(s, places=None):
    """A place to go: {place} 'park', {at_place} 'at the park', spots to look."""
    noun, at, spots = s.pick(places or PLACES)
    s.v["place"], s.v["at_place"] = noun, at
    spots = list(spots)
    s.rng.shuffle(spots)
    s.v["spot1"], s.v["spot2"], s.v["spot3"] = spots[:3]


def bind_home_spots(s):
    spots = list(HOME_SPOTS)
    s.rng.shuffle(spots)
    s.v["spot1"], s.v["spot2"], s.v["spot3"] = spots[:3]


def bind_find(s):
    noun, adjs = s.pick(FINDS)
    s.v["thing"] = noun
    s.v["thingd"] = s.pick(adjs) + " " + noun


def is_animal(c):
    return c.kind not in ("girl", "boy", "little girl", "little boy")


# ---------------------------------------------------------------- beginnings

CHILD_OPENINGS = [
    "Once upon a time, there was {a:trait} {kind} named {N}.",
    "Once upon a time, there was a little {kid} named {N}.",
    "Once upon a time, in a {setting}, there lived {a:trait} {kind} named {N}.",
    "There once was {a:kind} named {N} who lived in a {setting}.",
    "Once there was {a:trait} {kind} called {N}.",
    "{N} was {a:trait} {kind} who loved to {act}.",
    "{N} was a little {kid} who lived in a {setting}.",
    "In a {setting}, there was {a:trait} {kind} named {N}.",
    "This is a story about {a:trait} {kind} named {N}.",
    "Once upon a time, {a:trait} {kind} named {N} lived with {his} family in a {setting}.",
    "{N} was {age} years old, and {he} loved to {act}.",
    "One sunny morning, {a:kind} named {N} woke up with a big smile.",
    "Once upon a time, there was a little {kid}, and {his} name was {N}.",
    "{N} was {a:trait} {kid} with a big smile.",
    "Once upon a time, there was {a:kind} named {N} who loved {his} {objd}.",
    "{N} was {a:trait} {kid} who loved {his} {objd}.",
    "There was once {a:trait} little {kid}, and everyone called {him} {N}.",
    "Once upon a time, {N} lived in a {setting} with {his} mom and dad.",
]

ANIMAL_OPENINGS = [
    "Once upon a time, there was {a:trait} little {kid} named {N}.",
    "Once upon a time, in a {wild}, there lived {a:kind} named {N}.",
    "There once was {a:trait} {kid} named {N}.",
    "{N} was {a:trait} little {kid} who loved to {wild_act}.",
    "In a {wild}, there lived {a:trait} {kid} called {N}.",
    "Once there was a little {kid} named {N}. {he} lived in a {wild}.",
    "{N} the {kid} lived in a {wild} with {his} family.",
    "Every morning, {N} the {kid} woke up early to {wild_act}.",
    "Long ago, in a {wild}, lived {a:trait} {kid} named {N}.",
    "This is a story about {a:kid} named {N}.",
]

CHILD_DETAILS = [
    "{H} loved to {act}.",
    "{H} had {a:objd} that {he} took everywhere.",
    "{HP} favorite color was {colour}.",
    "Every day, {he} {routine}.",
    "{H} was always ready to play.",
    "{H} did not like {dislike}.",
    "{H} was very {trait} and liked to smile.",
    "{H} had a big smile and {colour} shoes.",
]

ANIMAL_DETAILS = [
    "{H} loved to {wild_act}.",
    "{H} had big, kind eyes.",
    "Every day, {he} liked to {wild_act}.",
    "{H} was very {trait}.",
    "{H} liked to play with all the other animals.",
    "{H} had {a:objd} that {he} loved very much.",
]

OTHER_INTROS = {
    "friend": ["{H} had a friend named {Oname}.",
               "{HP} best friend was {a:okind} named {Oname}.",
               "{Oname} was {HP} best friend.",
               "{H} liked to play with {his} friend {Oname}.",
               "{H} and {his} friend {Oname} played together every day."],
    "sibling": ["{H} had {a:okind} named {Oname}.",
                "{HP} {okind}, {Oname}, always wanted to play with {him}.",
                "{H} lived with {his} mom, {his} dad and {his} {okind}, {Oname}."],
    "pet": ["{H} had {a:okind} named {Oname}.",
            "{HP} {okind}, {Oname}, went everywhere with {him}.",
            "{H} lived with {his} family and {a:okind} named {Oname}."],
    "parent": ["{HP} {okind} loved {him} very much.",
               "{H} liked to help {his} {okind}.",
               "{HP} {okind} was kind and always had time to play."],
}


def begin(s):
    """The first paragraph: the hero named in the first sentence, a few details."""
    if s.v.get("begun"):
        return
    s.v["begun"] = "yes"
    s.v["age"] = s.pick(LISTS["age"])
    animal = is_animal(s.hero)
    s.v["kid"] = s.hero.kind.replace("little ", "")
    s.v["kind"] = s.v["kid"] if animal else s.hero.kind
    if "objd" not in s.v:
        bind_toy(s)
    s.add(ANIMAL_OPENINGS if animal else CHILD_OPENINGS)
    details = list(ANIMAL_DETAILS if animal else CHILD_DETAILS)
    s.rng.shuffle(details)
    for template in details[:s.pick([0, 1, 2, 2, 3, 3])]:
        s.add(template)
    flavour(s, "life", 0.6)
    flavour(s, "life", 0.3)
    if s.o.role in OTHER_INTROS and s.chance(0.7):
        s.add(OTHER_INTROS[s.o.role])
        s.v["introduced"] = "yes"


# ---------------------------------------------------------------- endings

FROM_THEN = {
    "lost": ["From that day on, {N} always kept {his} {obj} close.",
             "{N} never lost {his} {obj} again."],
    "stuck": ["From that day on, {N} played with {his} {obj} far from the trees.",
              "{N} and {O} played with the {obj} all afternoon."],
    "broken": ["{N} took good care of {his} {obj} from then on.",
               "From that day on, {N} was careful with {his} toys."],
    "share": ["From that day on, {N} and {O} always shared their toys.",
              "{N} and {O} took turns and played together all day."],
    "help_animal": ["{N} often thought about the little {animal}.",
                    "The {animal} came back to visit {N} every day."],
    "fear": ["{N} was not scared anymore.",
             "From that day on, {N} was a little braver."],
    "disobey": ["From that day on, {N} always listened.",
                "{N} {lesson}."],
    "gift": ["{N} felt warm inside.", "{N} was proud of {his} gift."],
    "new_friend": ["From that day on, {N} and {O} were best friends.",
                   "{N} and {O} played together every day after that."],
    "garden": ["{N} could not wait to plant more seeds.",
               "Every morning, {N} went to say hello to {his} {plant}."],
    "weather": ["{N} thought it was the best rainy day ever.",
                "{N} was happy that the rain came after all."],
    "race": ["{N} and {O} ran again the next day, just for fun.",
             "{N} smiled all the way home."],
    "hide": ["{N} and {O} played again the next day.",
             "{N} found the best hiding spots after that."],
    "trip": ["{N} could not wait to go back to the {place}.",
             "On the way home, {N} fell asleep with a smile."],
    "wish": ["{N} played with {his} new {wish} every day.",
             "{N} took good care of {his} {wish}."],
    "noise": ["{N} laughed and went back to sleep.",
              "{N} was not afraid of the noise anymore."],
    "learn": ["{N} was very proud.", "Now {N} could {skill} all by {himself}."],
    "bake": ["{N} said it was the best {baked} ever.",
             "{N} wanted to bake again the next day."],
    "clean": ["{N} kept {his} room clean after that.",
              "{N} liked {his} clean room very much."],
    "find": ["{N} kept the {thing} in a special box.",
             "{N} looked at the {thing} every night before bed."],
    "snow": ["{N} hoped it would snow again tomorrow.",
             "That night, {N} dreamed of snowmen."],
    "sick": ["{N} was glad to be well again.", "{N} ran outside to play."],
    "magic": ["{N} never told anyone about the {item}, except {O}.",
              "{N} was happy to be home."],
    "visit": ["{N} could not wait to visit again.",
              "{N} waved goodbye until the house was too small to see."],
    "lost_child": ["From then on, {N} always stayed close.",
                   "{N} held {Os} hand all the way home."],
    "cheer": ["{N} and {O} were best friends forever.",
              "{N} was happy that {O} was happy."],
    "party": ["{N} said it was the best birthday ever.",
              "{N} fell asleep with a smile and a tummy full of cake."],
}


def ending(s, key):
    """One to three closing sentences; the name often comes back here."""
    s.v["moral"] = s.pick(MORALS[key])
    closers = [
        ["{N} was happy.", "{N} was very happy.", "{N} smiled a big smile.",
         "{N} felt happy and proud.", "It was the best day ever for {N}."],
        FROM_THEN[key],
        ["{N} learned that {moral}.", "That day, {N} learned that {moral}.",
         "{H} learned that {moral}."],
        ["And they all lived happily ever after.", "It was a happy day.",
         "They all had a great day.", "Everyone was happy.",
         "That night, {N} went to bed with a big smile."],
    ]
    keep = sorted(s.rng.sample(range(len(closers)), s.pick([1, 1, 2, 2, 3])))
    for i in keep:
        s.add(closers[i])
    flavour(s, "end", 0.3)
    if s.chance(0.03):
        s.add("The end.")


# ---------------------------------------------------------------- plots
# Each plot binds its words, writes the beginning, its middle and an ending.

def plot_lost(s):
    bind_place(s)
    begin(s)
    s.para()
    s.add(["One day, {H} took {his} {objd} to the {place}.",
           "One sunny day, {H} and {O} went to the {place}. {H} brought {his} {objd}.",
           "One morning, {H} went to the {place} with {O}. {he} took {his} {obj} along.",
           "After lunch, {H} and {O} went to play {at_place}. {N} took {his} {obj} along."])
    scene(s)
    s.add(["{H} played with {his} {obj} for a long time.",
           "{H} and {O} played and laughed in the sun.",
           "{H} put {his} {obj} down and ran to look at {see}.",
           "They ran, jumped and played all morning."])
    s.maybe(0.5, ["{H} liked the {place} very much.", "They saw {see} and stopped to look.",
                  '"This is fun!" said {N}.', "{H} laughed and ran around in circles."])
    s.add(["When it was time to go home, {H} could not find {his} {obj}.",
           "Then {H} looked around. {HP} {obj} was gone!",
           "After a while, {H} saw that {his} {obj} was not there anymore.",
           "But when {H} turned around, {his} {obj} was gone."])
    s.add(['"Oh no! Where is my {obj}?" cried {N}.',
           '{H} felt {sad}. "I lost my {obj}," {he} said.',
           '{H} looked left and right, but {he} could not see it. {he} began to cry.',
           '"My {obj}! I can\'t find my {obj}!" said {N}.'])
    s.para()
    s.say(['"Don\'t be sad, {N}," said {O}. "We will find it together."',
           '{O} gave {HO} a hug. "Let\'s look for it," {ohe} said.',
           '"I will help you look, {N}!" said {O}.',
           '"Where did you see it last?" asked {O}.'],
          ['{O} barked and wagged {ohis} tail, as if to say, "I will help!"',
           '{O} licked {Ns} hand and sniffed the ground.'])
    s.add(["They looked {spot1}, but the {obj} was not there.",
           "First, they looked {spot1}. Then they looked {spot2}. There was no {obj}.",
           "{H} looked {spot1} and {spot2}, but {he} did not find it."])
    s.maybe(0.5, ["{H} was about to give up.",
                  "{H} was tired, but {he} did not stop looking.",
                  '"It is not here," said {N} with a sigh.'])
    if s.o.role == "pet":
        s.add(["Then {O} ran to a spot {spot3} and barked. {H} ran over and saw {his} {obj}!",
               "Suddenly, {O} dug {spot3} and pulled out the {obj}!"])
    else:
        s.add(["Then {O} pointed {spot3}. There was the {obj}!",
               "At last, {H} found the {obj} {spot3}.",
               "Then {H} saw something {spot3}. It was {his} {obj}!"])
    s.add(['"My {obj}!" said {N}. "Thank you, {Ov}!"',
           '{H} hugged {his} {obj} and smiled.',
           '"You found it!" said {N}, and {he} gave {O} a big hug.',
           '{H} jumped up and down. "I found it! I found my {obj}!"'])
    s.maybe(0.4, ["The {obj} was a little dirty, but it was fine.",
                  '"Don\'t run away again, {obj}," said {N} with a laugh.'])
    ending(s, "lost")


def plot_stuck(s):
    bind_toy(s, "stuck")
    bind_place(s)
    s.v["high"] = s.pick(["high up in a tree", "on the roof", "on top of a tall fence",
                          "in a big tree", "on a high branch"])
    begin(s)
    s.para()
    s.add(["One windy day, {H} went to the {place} with {his} {obj}.",
           "One day, {H} was playing with {his} {objd} {at_place}.",
           "One afternoon, {H} and {O} took the {obj} to the {place}."])
    scene(s)
    s.add(["{H} threw it up high, higher than ever.",
           "The wind came and took the {obj} away.",
           "{H} played with it and laughed, until a big wind came.",
           "{H} ran fast, and the {obj} went up and up."])
    s.add(["Now the {obj} was stuck {high}.", "The {obj} got stuck {high}.",
           "Oh no! The {obj} was {high}, and it did not come down."])
    s.maybe(0.5, ["{H} looked up at it for a long time.", "The {obj} was so far away.",
                  '"Come down, {obj}!" called {N}. But it did not move.'])
    s.add(['"My {obj}!" cried {N}. "How will I get it down?"',
           '{H} was {sad}. {he} could not reach it.',
           '{H} jumped and jumped, but {he} was too small.'])
    s.para()
    s.maybe(0.6, ["{H} tried to get it with a long stick, but the stick was too short.",
                  "{H} wanted to climb up, but it was too high and {he} was {scared}.",
                  "{H} threw {his} shoe at it, but the shoe got stuck too!"])
    if s.o.role == "animal":
        s.add(["Just then, {a:okind} came by. \"What is wrong?\" asked the {okind}.",
               "Then {a:okind} came down next to {HO}. \"Why are you sad?\" it asked."])
        s.add(['"My {obj} is stuck," said {N}. "Can you help me?"',
               '{H} pointed up. "My {obj} is up there," {he} said.'])
        s.add(['"I can help," said the {okind}. It went up and pushed the {obj} down.',
               'The {okind} went up to the {obj} and pulled it free.'])
        s.add(['"Thank you, {Ov}!" said {N}.', '{H} thanked the {okind} again and again.'])
    else:
        if s.chance(0.6):
            s.add(['{H} ran to get {O}. "{Ov}, my {obj} is stuck! Can you help me?"',
                   '"Can you help me, {Ov}?" asked {N}. "My {obj} is stuck."'])
            s.add(['"Of course, {N}," said {O}.', '"Let\'s get it down," said {O}.',
                   '"Don\'t worry, {N}," said {O}. "I have an idea."'])
        else:
            s.add(['Then {O} came to see what was wrong. {H} pointed at the {obj}.',
                   '{O} heard {N} crying and came over.'])
            s.add(['"Don\'t worry, {N}," said {O}. "I can help."',
                   '"I see it, {N}," said {O}. "Let me try."'])
        s.add(["{OH} got a ladder and climbed up to get the {obj}.",
               "{OH} lifted {HO} up high, and {he} grabbed the {obj}.",
               "{OH} found a long stick and pushed the {obj} free.",
               "{OH} stood on a box and reached up. {ohe} got it!"])
        s.add(['"Thank you, {Ov}!" said {N}.', '{H} gave {O} a big hug.',
               '"You did it!" said {N}.'])
    s.maybe(0.4, '"Be careful next time, {N}," said {O}.')
    ending(s, "stuck")


def plot_broken(s):
    bind_toy(s, "break")
    begin(s)
    s.para()
    culprit = s.chance(0.4) and s.o.role in ("friend", "sibling")
    if culprit:
        s.add(["One morning, {H} and {O} were playing with {Ns} {obj}.",
               "One day, {H} took {his} {objd} to show {O}."])
        s.add(["{O} wanted to play with it too and pulled it hard.",
               "{O} grabbed the {obj} and ran with it."])
        s.add(["The {obj} fell to the floor and broke.", "Crack! The {obj} broke."])
        s.add(['"You broke my {obj}!" cried {N}.', '{H} was very angry and {sad}.'])
        s.para()
        s.add(['{O} looked down. "I am sorry, {N}," {ohe} said. "I did not mean to."',
               '"I am so sorry, {N}," said {O}. "Can I help you fix it?"'])
        s.add(['{H} thought for a moment. "It is okay," said {N}.',
               '{H} wiped {his} eyes and nodded.'])
        s.add(["Together, they fixed the {obj} with some glue and tape.",
               "{H} and {O} fixed the {obj} together. It looked almost new."])
        s.v["moral_key"] = "broken"
    else:
        s.add(["One day, {H} was playing with {his} {obj} in {his} room.",
               "One rainy afternoon, {H} was playing with {his} {objd} at home.",
               "One day, {H} was running around the house with {his} {obj}."])
        s.add(["{H} dropped it by mistake, and it broke.",
               "Then the {obj} fell off the table and broke into two pieces.",
               "{H} played too hard, and the {obj} broke."])
        s.add(['{H} was {sad}. "My {obj} is broken!" {he} cried.',
               '"Oh no," said {N}. "My favorite {obj}!"',
               '{H} sat down and cried.'])
        s.para()
        s.say(['{O} came in. "What happened, {N}?" asked {O}.',
               '"Don\'t cry, {N}," said {O}. "Let me see."'],
              ['{O} came and sat next to {HO}.'])
        s.add(['"Maybe we can fix it," said {O}.',
               '"We can fix it with glue," said {O}.',
               '{O} got some glue and some tape.'])
        s.add(["{H} and {O} worked very hard. Soon the {obj} was fixed.",
               "It took a long time, but they fixed the {obj}.",
               "They put the pieces back together, and the {obj} was as good as new."])
        s.maybe(0.5, ["The {obj} had a little crack, but {H} did not mind.",
                      '"It looks even better now," said {N}.'])
    s.add(['"Thank you, {Ov}!" said {N}.', '{H} smiled and hugged the {obj}.'])
    ending(s, "broken")


def plot_share(s):
    bind_place(s)
    begin(s)
    s.para()
    s.add(["One day, {H} and {O} were playing {at_place}.",
           "One day, {O} came to play at {Ns} house.",
           "One afternoon, {H} and {O} went to the {place}."])
    scene(s)
    s.add(["{H} had {his} {objd} with {him}.", "{H} brought {his} {objd}.",
           "{H} was playing with {his} {objd}."])
    s.add(['"Can I play with it?" asked {O}.', '{O} wanted the {obj} too.',
           '"I want the {obj}!" said {O}.'])
    s.add(['"No, it is mine!" said {N}.', '{H} did not want to share.',
           '"No, I want to play with it first," said {N}.'])
    s.para()
    s.add(["They both pulled the {obj}. {H} pulled one way and {O} pulled the other way.",
           "{H} held the {obj} tight, and {O} started to cry.",
           "They began to fight over the {obj}."])
    if s.chance(0.35):
        s.v["adult"], s.v["adult_he"] = s.pick([("mom", "she"), ("dad", "he")])
        s.add(["{HP} {adult} heard them and came outside. \"What is wrong?\" {adult_he} asked.",
               "Then {HP} {adult} came in. \"Why are you two fighting?\" {adult_he} asked."])
        s.add(['"It is my {obj}!" said {N}. "{O} wants it."',
               '"{O} took my {obj}!" said {N}.'])
        s.add(['"You can share," said {his} {adult}. "Then you can both play."',
               '"When you share, you both have fun," said {his} {adult}.'])
    else:
        s.add(["Then {H} saw that {O} was {sad}.",
               "The {obj} fell to the ground, and nobody was happy."])
        s.add(["{H} thought about it. {he} did not like to see {O} sad.",
               '{H} remembered what {his} mom always said: sharing is kind.'])
    s.para()
    s.add(['"Here, {O}," said {N}. "You can play with it too."',
           '"Let\'s take turns," said {N}.',
           '"I am sorry, {O}," said {N}. "We can play together."'])
    s.add(['{O} smiled. "Thank you, {N}!"', '"Yay!" said {O}.',
           '{O} stopped crying and smiled at {N}.'])
    s.add(["They took turns with the {obj}, and they had so much fun.",
           "They played with the {obj} together all day.",
           "Playing together was much more fun than fighting."])
    s.maybe(0.5, ["{H} saw that sharing made {O} smile, and that made {HO} smile too.",
                  "Later, {O} let {N} play with {ohis} toys too."])
    ending(s, "share")


def plot_help_animal(s):
    noun, problem, fix = s.pick(NEEDY)
    s.v["animal"], s.v["problem"], s.v["fix"] = noun, problem, fix
    bind_place(s)
    begin(s)
    s.para()
    s.add(["One day, {H} was walking {at_place} with {O}.",
           "One morning, {H} went to the {place}.",
           "One day, {H} and {O} were playing {at_place}."])
    scene(s)
    s.add(["Suddenly, {H} heard a small sound. It was {a:animal}!",
           "{H} saw {a:animal} {spot1}.",
           "Then {H} found a little {animal} {spot1}."])
    s.add(["The {animal} {problem}.", "The poor {animal} {problem}."])
    s.maybe(0.5, ["It looked {scared}.", "It made a small, sad sound."])
    s.add(['"Oh no," said {N}. "We have to help it."',
           '{H} felt sorry for the {animal}. "Don\'t worry, little one," {he} said.',
           '"Look, {Ov}!" said {N}. "The {animal} needs help."'])
    s.para()
    s.say(['"What can we do?" asked {O}.', '"I will help you, {N}," said {O}.',
           '"Be gentle," said {O}.'],
          ['{O} sat down quietly and watched.'])
    s.add(["{H} {fix}.", "{H} and {O} worked together. {N} {fix}."])
    s.add(["The {animal} looked at {N}, as if to say thank you.",
           "The {animal} was safe, and {H} was {glad}.",
           '"You are safe now," said {N} softly.'])
    s.maybe(0.5, ['{O} smiled. "You did a good thing, {N}."',
                  '"You are very kind, {N}," said {O}.'])
    ending(s, "help_animal")


FEARS = [
    ("the dark", "turn off the light", "The room was very dark.", "a little night light"),
    ("the big slide", "go down the slide", "The slide was so tall!", "holding hands at the top"),
    ("the water", "swim in the lake", "The water looked deep and cold.", "a pair of arm floats"),
    ("thunder", "sleep during the storm", "Boom! The thunder was loud.", "a story and a warm hug"),
    ("the big dog next door", "walk past the fence", "The dog barked very loudly.", "a treat for the dog"),
    ("the high swing", "go on the swing", "The swing went up so high!", "going slowly at first"),
    ("the first day of school", "go into the classroom", "There were so many new faces.", "a friendly smile"),
]


def plot_fear(s):
    fear, task, scene, help_ = s.pick(FEARS)
    s.v["fear"], s.v["task"], s.v["scene"], s.v["help"] = fear, task, scene, help_
    begin(s)
    s.para()
    s.add(["But {H} had one problem. {he} was {scared} of {fear}.",
           "{H} was brave about many things, but {he} was {scared} of {fear}.",
           "There was one thing {H} did not like: {fear}."])
    s.add(["One day, {H} had to {task}.", "One night, {H} had to {task}.",
           "Then a day came when {H} had to {task}."])
    s.add("{scene}")
    s.maybe(0.5, ["{H} wanted to run away.", "{HP} heart was going very fast."])
    s.add(['"I can\'t do it," said {N}. "I am too scared."',
           '{H} held {his} breath and shook {his} head.',
           '{HP} legs felt like jelly.'])
    s.para()
    s.add(['{O} sat next to {HO}. "It is okay to be scared, {N}," said {O}.',
           '"Don\'t worry, {N}," said {O}. "I am here with you."',
           '{O} took {Ns} hand. "We can do it together," {ohe} said.'])
    s.add(["{OH} had an idea: {help}.", "{OH} said that {help} would make it easier.",
           "{O} thought {help} would help."])
    s.add(["{H} took a deep breath. {he} counted to three.",
           "{H} closed {his} eyes and tried to be brave.",
           "{H} was still a little scared, but {he} tried."])
    s.add(["And {H} did it! It was not so bad after all.",
           "It was fun! {H} laughed and laughed.",
           "{H} did it, and {he} was fine."])
    s.add(['"I did it, {Ov}!" shouted {N}.', '"Again!" said {N} with a big smile.',
           '"You are so brave, {N}!" said {O}.'])
    ending(s, "fear")


RULES = [
    ("go near the river", "went to the river", "slipped on a wet rock and fell in the mud",
     "all wet and muddy", "never went near the river alone again"),
    ("eat the cookies before dinner", "ate three cookies", "got a tummy ache",
     "very sick", "always waited for dinner after that"),
    ("go into the woods alone", "went into the woods", "got lost among the tall trees",
     "lost and scared", "never went into the woods alone again"),
    ("play ball near the window", "threw the ball near the window", "broke the window",
     "very sorry", "played ball far from the windows after that"),
    ("climb the big tree", "climbed the big tree", "got stuck on a high branch",
     "stuck and scared", "only climbed the little trees after that"),
    ("touch the hot stove", "touched the stove", "burned {his} finger a little",
     "hurt and sad", "stayed away from the stove after that"),
    ("jump on the bed", "jumped on the bed", "fell off and bumped {his} head",
     "hurt and sad", "never jumped on the bed again"),
    ("run in the street", "ran after a ball into the street", "almost got hit by a bike",
     "very scared", "always stopped and looked before the street after that"),
]


def plot_disobey(s):
    rule, did, result, state, lesson = s.pick(RULES)
    s.v.update(rule=rule, did=did, result=result, state=state, lesson=lesson)
    begin(s)
    s.para()
    s.add(['One day, {O} said, "{N}, please do not {rule}."',
           '{O} always told {HO}, "Do not {rule}."',
           '"{N}," said {O}. "You must not {rule}."'])
    s.add(['"Okay," said {N}.', '{H} nodded.', '{H} said yes, but {he} did not really listen.'])
    s.add(["But later, {H} wanted to see what would happen.",
           "But {H} was curious.", "But when nobody was looking, {H} forgot."])
    s.para()
    s.add(["{H} {did}.", "So {N} {did}."])
    s.add(["Then {he} {result}.", "Oh no! {H} {result}."])
    s.add(["{H} was {state}.", "Now {N} was {state}."])
    s.add(['"{Ov}!" cried {N}. "Help!"', '{H} began to cry for {his} {okind}.',
           '{H} wished {he} had listened.'])
    s.para()
    s.add(["{O} came running.", "{O} heard {HO} and came fast."])
    s.add(['"Are you okay, {N}?" asked {O}.', '{O} hugged {HO} tight.'])
    s.add(['"I am sorry, {Ov}," said {N}. "I did not listen."',
           '"I should have listened to you," said {N}.'])
    s.add(['"I am glad you are okay," said {O}. "Rules help keep you safe."',
           '{O} smiled. "Everyone makes mistakes. Next time, listen."'])
    ending(s, "disobey")


GIFTS = [
    ("a card", "drew a big heart and {colour} flowers on it"),
    ("a cake", "mixed flour, eggs and sugar and baked it"),
    ("a picture", "painted a sunny house and a big tree"),
    ("some flowers", "picked the prettiest flowers in the garden"),
    ("a necklace", "put {colour} beads on a long string"),
    ("a little boat", "made it from a box and a stick"),
]


def plot_gift(s):
    gift, how = s.pick(GIFTS)
    s.v["gift"], s.v["how"] = gift, how
    s.v["mess"] = s.pick(["the paint spilled on the floor",
                          "the wind blew it away",
                          "it fell into a puddle",
                          "a dog ran off with it"])
    begin(s)
    s.para()
    s.add(["One day, {H} knew it was {Os} birthday.",
           "Soon it would be {Os} birthday, and {H} wanted to make something special.",
           "{H} wanted to give {O} a surprise."])
    s.add(['"I will make {gift}," said {N}.', '{H} had an idea. {he} would make {gift}.'])
    s.add(["{H} {how}.", "{H} worked hard. {he} {how}."])
    s.maybe(0.5, ["It took a long time, but {he} did not stop.", "{H} wanted it to be perfect."])
    s.maybe(0.6, ["But then {mess}. {H} was {sad}.",
                  "But oh no, {mess}! {H} almost cried."])
    s.maybe(0.5, ['"I will try again," said {N}. And {he} did.',
                  "{H} did not give up. {he} made it again, even better."])
    s.para()
    s.add(["Then {H} gave the gift to {O}.", "{H} ran to {O} with the gift.",
           'At the party, {H} said, "Happy birthday, {Ov}! This is for you."'])
    s.add(['{O} smiled. "Oh, {N}, I love it!"', '"Thank you, {N}," said {O}. "It is beautiful."',
           '{O} hugged {N}. "This is the best gift ever!"'])
    ending(s, "gift")


def plot_new_friend(s):
    bind_place(s)
    begin(s)
    s.para()
    s.add(["One day, {H} went to the {place}.", "One sunny day, {H} was playing alone {at_place}.",
           "{H} did not have many friends, so {he} often played alone {at_place}."])
    scene(s)
    if s.o.role == "animal":
        s.add(["Then {H} saw {a:okind} sitting all alone.", "{H} saw a little {okind} {spot1}."])
    else:
        s.add(["Then {H} saw {a:okind} {spot1}. {ohe} looked sad and alone.",
               "There was a new {okind} {at_place}. The {okind} was all alone."])
    s.add(["{H} felt a little shy.", "{H} wanted to say hello.",
           "{H} was shy, but {he} walked over."])
    s.add(['"Hello," said {N}. "My name is {N}. What is your name?"',
           '"Hi! I am {N}," said {N}. "Do you want to play?"'])
    s.para()
    if s.o.role == "animal":
        s.add(['"I am a {okind}," it said. "I do not have a friend."',
               '"Hello," said the {okind}. "I would like a friend."'])
        s.add(["{H} and the {okind} played all day.",
               "They played games and ran in the grass."])
    else:
        s.v["introduced"] = "yes"
        s.add(['"My name is {Oname}," said the {okind}.',
               'The {okind} smiled. "I am {Oname}."'])
        s.add(['"Do you want to play with me, {O}?" asked {N}.',
               '"Let\'s play with my {obj}," said {N}.'])
        s.add(['"Yes, please!" said {O}.', '{O} nodded and smiled.'])
        s.add(["{H} and {O} played {at_place} until it was time to go home.",
               "They played with the {obj} and laughed a lot.",
               "They ran, jumped and played hide and seek."])
        s.maybe(0.5, ["They shared {snack}.", "They laughed until their tummies hurt."])
    s.add(['"Will you come back tomorrow?" asked {N}.', '{H} had a new friend.'])
    ending(s, "new_friend")


def plot_garden(s):
    s.v["plant"], s.v["seedling"] = s.pick([
        ("sunflower", "a tall yellow sunflower"), ("tomato plant", "a plant with red tomatoes"),
        ("flower", "a pretty {colour} flower"), ("apple tree", "a little apple tree"),
        ("carrots", "a row of orange carrots"), ("pumpkin", "a big orange pumpkin")])
    begin(s)
    s.para()
    s.add(["One day, {O} gave {N} a little seed.", "One spring day, {H} found a seed.",
           "{H} and {O} went to the garden with some seeds."])
    s.add(['"If you plant it and give it water, it will grow," said {O}.',
           '"What will it be?" asked {N}.'])
    s.add(["{H} dug a little hole and put the seed in.",
           "{H} planted the seed in the soft dirt."])
    s.add(["Every day, {H} gave it water.", "{H} watered the seed every morning."])
    s.para()
    s.add(["But nothing happened. {H} was {sad}.",
           "After a few days, {H} still could not see anything.",
           "Days went by, and there was still no plant."])
    s.add(['"Why is it not growing?" {H} asked.', '"It is taking so long," said {N}.'])
    s.add(['"You have to wait, {N}," said {O}. "Good things take time."',
           '"Be patient," said {O}. "It is growing under the ground."'])
    s.add(["So {H} waited and kept giving it water.", "{H} waited and waited."])
    s.para()
    s.add(["Then one morning, {H} saw a little green leaf!",
           "One day, there was a tiny green shoot."])
    s.add(["Soon it grew into {seedling}.", "After many days, there was {seedling}."])
    s.add(['"Look, {Ov}!" shouted {N}. "It grew!"', '{H} clapped {his} hands.'])
    ending(s, "garden")


def plot_weather(s):
    s.v["plan"] = s.pick(["have a picnic", "go to the park", "play ball outside",
                          "go to the beach", "fly a kite"])
    s.v["inside"] = s.pick(["built a big fort with pillows and blankets",
                            "played a game with cards",
                            "made a puppet show with old socks",
                            "painted pictures at the table",
                            "had a picnic on the living room floor"])
    begin(s)
    s.para()
    s.add(["One day, {H} and {O} wanted to {plan}.",
           '"Today we will {plan}!" said {N}.',
           "{H} woke up early. Today {he} would {plan} with {O}."])
    s.add(["But when {he} looked out the window, it was raining.",
           "But then dark clouds came, and it began to rain.",
           "But soon the rain came down, drip, drop, drip."])
    s.add(['"Oh no," said {N}. "Now we can\'t {plan}."',
           '{H} was {sad}. {he} did not like rainy days.'])
    s.para()
    s.say(['"Don\'t be sad, {N}," said {O}. "We can play inside."',
           '{O} had an idea. "We can have fun inside!"'],
          ['{O} brought {HO} a sock to play with.'])
    s.add(["So they {inside}.", "{H} and {O} {inside}."])
    s.add(["It was so much fun!", "They laughed and laughed.",
           "{H} forgot all about the rain."])
    flavour(s, "food", 0.4)
    s.maybe(0.5, ["They had {snack} and told funny stories.",
                  "{H} made a funny face, and {O} laughed."])
    s.para()
    s.add(["Later, the rain stopped and the sun came out.",
           "After a while, the sun came back."])
    s.maybe(0.6, ["There was a big rainbow in the sky!",
                  "There were big puddles everywhere, so {H} put on {his} boots and jumped in them."])
    s.add(['"Look, {Ov}!" said {N}.', '"What a good day," said {N}.'])
    ending(s, "weather")


def plot_game(s):
    bind_place(s)
    begin(s)
    s.para()
    if s.chance(0.5):
        s.add(['One day, {H} and {O} were {at_place}. "Let\'s have a race!" said {N}.',
               '"I can run faster than you!" said {O}. "Let\'s race to the big tree," said {N}.'])
        s.add(['"Ready, set, go!" said {O}, and they ran.', "They ran as fast as they could."])
        if s.chance(0.5):
            s.add("{H} was in front, but then {he} heard a cry.")
            s.add(["{O} had fallen down and hurt {ohis} knee.",
                   '{O} was on the ground. "Ouch!" cried {O}.'])
        else:
            s.add("Then {O} tripped on a rock and fell down.")
            s.add(['"Ouch!" cried {O}.', "{H} stopped running and went back."])
        s.para()
        s.add(['"Are you okay, {Ov}?" asked {N}.', '{H} helped {O} up.'])
        s.add(['"Thank you, {N}," said {O}. "But now you will not win."',
               '"Why did you stop?" asked {O}.'])
        s.add(['"Friends are more important than winning," said {N}.',
               '"It is more fun to run together," said {N}.'])
        s.add(["So they walked to the finish together, hand in hand.",
               "They finished the race together, side by side."])
        ending(s, "race")
        return
    else:
        s.add(['One day, {H} and {O} played hide and seek {at_place}.',
               '"Let\'s play hide and seek!" said {O}.'])
        s.add(['{O} closed {ohis} eyes and counted to ten.', '{O} counted, "One, two, three..."'])
        s.add(["{H} hid {spot1}.", "{H} ran and hid {spot1}. {he} was very quiet."])
        s.add(["{O} looked {spot2}, but {N} was not there.",
               "{O} looked and looked, but {ohe} could not find {N}."])
        s.para()
        s.add(["{H} waited and waited. It was getting dark.",
               "{H} started to giggle. {he} could not stop!"])
        s.add(['"I found you, {N}!" shouted {O}.',
               '"{N}, where are you?" called {O}. "I give up!"'])
        s.add(["{H} jumped out and laughed.", '"Here I am!" said {N}.'])
        s.add(["Then it was {Os} turn to hide.", "They played again and again."])
    ending(s, "hide")


TRIPS = [
    ("zoo", "at the zoo", ["a tall giraffe", "a big gray elephant", "a lion with a big mane",
                           "funny monkeys", "a sleepy bear"]),
    ("beach", "at the beach", ["big waves", "little crabs", "white birds", "pretty shells",
                               "a boat far away"]),
    ("farm", "on the farm", ["pink pigs", "a big brown cow", "white sheep", "a noisy hen",
                             "a little horse"]),
    ("lake", "at the lake", ["ducks on the water", "a big fish", "green frogs", "a small boat",
                             "a family of swans"]),
    ("fair", "at the fair", ["a big wheel", "red balloons", "a man with a funny hat",
                             "horses that went round and round", "sweet pink candy"]),
]


def plot_trip(s):
    noun, at, sights = s.pick(TRIPS)
    s.v["place"], s.v["at_place"] = noun, at
    sights = list(sights)
    s.rng.shuffle(sights)
    s.v["sight1"], s.v["sight2"], s.v["sight3"] = sights[:3]
    s.v["mishap"], s.v["fixup"] = s.pick([
        ("dropped {his} ice cream on the ground", "{O} shared {ohis} ice cream with {HO}"),
        ("lost {his} hat in the wind", "{O} ran and caught the hat"),
        ("got very tired and wanted to sit down", "{O} carried {HO} for a while"),
        ("could not see over the people", "{O} lifted {HO} up high"),
        ("fell down and hurt {his} knee", "{O} gave {HO} a hug and a bandage")])
    begin(s)
    s.para()
    s.add(["One day, {H} went to the {place} with {O}.",
           '"Today we are going to the {place}!" said {O}. {H} jumped with joy.',
           "On Saturday, {O} took {N} to the {place}."])
    scene(s)
    s.add(["{at_place}, {H} saw {sight1} and {sight2}.",
           "First, they saw {sight1}. Then they saw {sight2}.",
           "{H} liked {sight1} best."])
    s.add(['"Look, {Ov}!" said {N}. "Look at that!"',
           '"Wow!" said {N}. {he} had never seen anything like it.'])
    s.maybe(0.7, "Then {H} saw {sight3}.")
    s.para()
    s.add(["But then {H} {mishap}.", "Later, {H} {mishap}."])
    s.add(["{H} was {sad}.", "{HP} eyes filled with tears."])
    s.add(["Then {fixup}.", "So {fixup}."])
    s.add(['"Thank you, {Ov}," said {N}.', "{H} smiled again."])
    ending(s, "trip")


def plot_wish(s):
    s.v["wish"] = s.pick(["red bike", "blue kite", "big ball", "toy train",
                          "doll with a pink hat", "box of crayons", "toy robot"])
    s.v["job"] = s.pick(["helped {his} neighbor in the garden",
                         "fed the neighbor's cat", "helped {his} mom wash the car",
                         "swept the steps", "picked up the toys in the yard"])
    begin(s)
    s.para()
    s.add(["One day, {H} saw a {wish} in a shop window.",
           "At the store, {H} saw a shiny {wish}."])
    s.add(['"I want that {wish}!" said {N}.', '{H} wanted the {wish} very much.'])
    s.add(['"We do not have money for it now," said {O}.',
           '"If you save your coins, you can buy it," said {O}.'])
    s.para()
    s.add(["So {H} had a plan. {he} would save {his} coins.",
           "{H} got a jar and put it on the shelf."])
    s.add(["Every day, {H} {job}, and {he} got a coin.", "Each week, {H} {job}, and {he} got a coin."])
    s.add(["{H} put each coin in the jar.", "The jar got fuller and fuller."])
    s.maybe(0.5, ["Sometimes {H} wanted to buy candy, but {he} did not.",
                  '"It is taking so long," said {N}. But {he} did not stop.'])
    s.para()
    s.add(["At last, there were enough coins.", "One day, the jar was full!"])
    s.add(["{H} and {O} went back to the store, and {H} bought the {wish}.",
           "{H} took the jar to the store and bought the {wish}."])
    s.add(['"I did it, {Ov}!" said {N}.', '{H} was {glad}.'])
    ending(s, "wish")


def plot_noise(s):
    s.v["sound"], s.v["cause"] = s.pick([
        ("a scratch, scratch at the window", "a little branch moving in the wind"),
        ("a bump under the bed", "the cat playing with a ball"),
        ("a hoo, hoo outside", "an owl sitting in the tree"),
        ("a tap, tap on the roof", "rain falling on the roof"),
        ("a squeak in the kitchen", "a tiny mouse eating a crumb"),
        ("a creak by the door", "the door moving in the wind")])
    begin(s)
    s.para()
    s.add(["One night, {H} was in bed.", "It was late, and {H} was trying to sleep."])
    s.add(["Then {he} heard {sound}.", "Suddenly, there was {sound}."])
    s.add(["{H} was {scared}.", "{H} pulled the blanket over {his} head."])
    s.add(['"Who is there?" asked {N} in a small voice.', '"What was that?" whispered {N}.'])
    s.para()
    if s.o.role == "pet":
        s.add(["{O} jumped on the bed and sat next to {HO}.",
               "{O} came and curled up by {Ns} feet."])
        s.add(["With {O} there, {H} felt braver.", "{H} felt a little better."])
    else:
        s.add(['{H} called, "{Ov}!" and {O} came in.', "{O} heard {HO} and came to the room."])
        s.add(['"What is wrong, {N}?" asked {O}.', '"Are you okay, {N}?" asked {O}.'])
        s.add(['"I heard a noise," said {N}.', '"There is something out there," said {N}.'])
    s.add(["Together, they went to look.", "{H} took a flashlight and looked."])
    s.add(["It was only {cause}!", "It was just {cause}."])
    s.add(["{H} laughed.", '"That is not scary at all," said {N}.'])
    ending(s, "noise")


SKILLS = [
    ("ride a bike", "fell off the bike", "rode all the way down the street"),
    ("tie {his} shoes", "made a big knot", "tied a perfect bow"),
    ("swim", "sank and swallowed some water", "swam across the pool"),
    ("jump rope", "tripped on the rope", "jumped twenty times in a row"),
    ("whistle", "only blew air", "whistled a little song"),
    ("read a book", "could not read the long words", "read the whole book"),
    ("catch a ball", "dropped the ball", "caught the ball every time"),
]


def plot_learn(s):
    skill, fail, win = s.pick(SKILLS)
    s.v.update(skill=skill, fail=fail, win=win)
    begin(s)
    s.para()
    s.add(["{H} wanted to learn to {skill}.", "{H} really wanted to {skill}.",
           "All of {Ns} friends could {skill}, but {he} could not."])
    s.add(["The first time {he} tried, {he} {fail}.", "{H} tried, but {he} {fail}."])
    s.maybe(0.5, ["{H} wanted to give up.", "{H} sat down on the grass with a frown."])
    s.add(['"I can\'t do it!" said {N}.', '{H} felt {sad}.'])
    s.para()
    s.add(['"Try again, {N}," said {O}. "I will help you."',
           '"Everyone falls at first," said {O}. "Let\'s try again."'])
    s.add(["{H} tried again. {he} {fail} again.", "So {N} tried again and again."])
    s.add(["But {H} did not give up.", "{H} was tired, but {he} kept trying."])
    s.add(["Day after day, {H} practiced with {O}.",
           "Every afternoon, {H} and {O} practiced."])
    s.para()
    s.add(["Then one day, {H} {win}!", "At last, {H} {win}!"])
    s.add(['"I did it, {Ov}! I did it!" shouted {N}.', '"Look at me!" said {N}.'])
    s.add(['"I am so proud of you, {N}," said {O}.', '{O} clapped and cheered.'])
    ending(s, "learn")


def plot_bake(s):
    s.v["baked"] = s.pick(["cake", "cookies", "pie", "muffins", "bread"])
    begin(s)
    s.para()
    s.add(["One day, {H} and {O} decided to bake {baked}.",
           '"Let\'s make {baked}!" said {O}. {H} clapped {his} hands.',
           "On a cold day, {H} wanted to help {O} bake {baked}."])
    s.add(["They got out the flour, the sugar and the eggs.",
           "{H} put on a big apron."])
    s.add(["{H} mixed and mixed.", "{H} poured the flour into the bowl."])
    s.add(["Oops! Flour went everywhere. {Ns} nose was all white.",
           "{H} spilled some milk on the floor.",
           "{H} dropped an egg on the floor. Crack!"])
    s.add(["{O} laughed.", '"Oh no!" said {N}, and then {he} laughed too.'])
    s.para()
    s.add(["They cleaned up and tried again.", "{O} helped {HO} clean up."])
    flavour(s, "food", 0.5)
    s.add(["Soon the kitchen smelled sweet and warm.",
           "They put it in the oven and waited."])
    s.add(['"Is it ready?" asked {N}.', '{H} looked through the oven door.'])
    s.add(["At last, the {baked} was ready.", "When it was done, it looked so good."])
    s.add(["{H} shared it with {his} family and friends.",
           '"Yum!" said {N}.', "They each had a big piece."])
    ending(s, "bake")


def plot_clean(s):
    bind_home_spots(s)
    begin(s)
    s.para()
    s.add(["{HP} room was very messy.", "{H} never put {his} toys away."])
    s.add(["There were toys on the floor, books on the bed and socks everywhere.",
           "Blocks and crayons were all over the floor."])
    s.add(['One day, {H} could not find {his} {obj}. "Where is it?" {he} asked.',
           "One morning, {H} wanted to play with {his} {obj}, but {he} could not find it."])
    s.add(['"Maybe if you clean your room, you will find it," said {O}.',
           '"Let\'s clean up," said {O}. "Then we can look."'])
    s.para()
    s.add(["{H} did not want to clean, but {he} started.",
           "So {H} and {O} began to clean."])
    s.add(["{he} put the books on the shelf and the socks in the basket.",
           "{H} put the blocks in the box."])
    s.add(["Then {H} looked {spot1}.", "{H} looked {spot1}. Nothing there."])
    s.add(["And there it was! {HP} {obj} was {spot2}!",
           "Then, {spot2}, {H} saw {his} {obj}!"])
    s.add(['"I found it!" said {N}.', '"My {obj}!" shouted {N}.'])
    s.add(["Now the room was clean, and {H} could play.",
           "{H} looked at the clean room and smiled."])
    ending(s, "clean")


def plot_find(s):
    bind_find(s)
    bind_place(s)
    begin(s)
    s.para()
    s.add(["One day, {H} went for a walk {at_place}.",
           "One morning, {H} was playing {at_place}."])
    scene(s)
    s.add(["{spot1}, {he} saw something shiny.",
           "{H} looked down and saw something {spot1}."])
    s.add(["It was {a:thingd}!", "{H} picked it up. It was {a:thingd}."])
    s.add(['"Wow," said {N}. "What a pretty {thing}!"',
           '{H} held the {thing} in {his} hand. It was so special.'])
    s.maybe(0.5, ["{H} put the {thing} in {his} pocket.",
                  "{H} turned it over and over in {his} hands."])
    s.para()
    s.add(["{H} ran to show {O}.", "{H} wanted to show it to {O}."])
    s.say(['"Look what I found, {Ov}!" said {N}.', '"{Ov}, look!" called {N}.'],
          ["{O} sniffed the {thing} and wagged {ohis} tail."])
    s.say(['"That is a very nice {thing}, {N}," said {O}.',
           '{O} smiled. "Where did you find it?"'],
          ["{H} laughed and patted {O}."])
    s.maybe(0.6, ['"Maybe it belongs to someone," said {N}. They looked, but nobody had lost it.',
                  "{H} wanted to find more, so they went back to the {place} together."])
    ending(s, "find")


def plot_snow(s):
    s.v["wear"] = s.pick(["{his} warm coat and {his} {colour} mittens",
                          "{his} boots, {his} hat and {his} long scarf",
                          "two sweaters and a big {colour} coat",
                          "{his} snow pants and {his} fuzzy hat"])
    begin(s)
    s.para()
    s.add(["One winter morning, {H} looked out the window. Everything was white!",
           "When {H} woke up, the whole yard was covered in snow.",
           "It snowed all night, and in the morning {H} saw a white, sparkly world."])
    s.add(['"Snow!" shouted {N}. "{Ov}, come and see!"',
           '"Can we play in the snow, {Ov}?" asked {N}.'])
    s.add(["{H} put on {wear}.", "{H} quickly put on {wear}."])
    s.add(["Outside, the snow went crunch, crunch under {his} feet.",
           "The cold air made {his} nose pink."])
    s.para()
    s.add(["{H} and {O} made a big snowman.", "First, {H} rolled a big ball of snow."])
    s.add(["They gave it a carrot for a nose and two buttons for eyes.",
           "The snowman got a hat, a scarf and a big smile made of little stones."])
    s.maybe(0.6, ["Then they threw snowballs and laughed.",
                  "Then {H} lay in the snow and made a snow angel.",
                  "Then they went down the hill on a red sled. Whoosh!"])
    s.add(["But soon {Ns} fingers were very cold.",
           "Then {H} fell in the deep snow, and some got into {his} boots.",
           "After a while, {H} began to shiver."])
    s.add(['"Brr! I am cold," said {N}.', '{H} did not want to stop, but {he} was cold.'])
    s.para()
    s.add(["So they went inside and had warm cocoa.",
           "Inside, {O} made hot soup, and {H} sat by the fire.",
           "They went in and got under a soft blanket."])
    s.add(["From the window, {H} could see the snowman smiling.",
           "{H} felt warm and cozy again."])
    ending(s, "snow")


def plot_sick(s):
    s.v["sick"], s.v["missed"] = s.pick([
        ("had a cold", "the trip to the park"), ("had a tummy ache", "the party"),
        ("had a fever", "the picnic"), ("had a sore throat", "singing at school"),
        ("felt sick and tired", "the day at the beach")])
    begin(s)
    s.para()
    s.add(["One morning, {H} woke up and did not feel well.",
           "One day, {H} {sick}.", "{H} sneezed and sneezed. {he} {sick}."])
    s.maybe(0.7, "{H} had to stay in bed all day.")
    s.add(['"But I want to go!" said {N}. {he} did not want to miss {missed}.',
           "{H} was {sad}, because {he} would miss {missed}."])
    s.para()
    if s.o.role == "pet":
        s.add(["{O} jumped on the bed and lay down next to {HO}.",
               "{O} came and put {ohis} head on {Ns} bed."])
        s.add(["{H} patted {O}, and {O} licked {his} hand.",
               "{O} stayed with {HO} all day."])
    else:
        s.add(["{O} came in with a bowl of warm soup.",
               "{O} brought {HO} some tea with honey.",
               "{O} made a card that said: Get well soon, {N}!"])
        s.add(['"This will help you feel better, {N}," said {O}.',
               '"I will stay with you," said {O}.'])
        s.add(["Then {O} read {HO} a story about {a:adj} {f_animal}.",
               "They played a quiet game on the bed.",
               "{OH} sang {HO} a soft song."])
    s.add(["{H} slept for a long time.", "{H} closed {his} eyes and rested."])
    s.para()
    s.add(["The next day, {H} felt much better.", "After two days, {H} was well again."])
    s.add(['"I feel better!" said {N}, and {he} jumped out of bed.',
           '"Thank you for taking care of me, {Ov}," said {N}.'])
    ending(s, "sick")


MAGIC = [("stone", "glowed with a soft blue light"), ("shell", "began to sing"),
         ("wand", "sparkled with tiny stars"), ("hat", "began to hum a little tune"),
         ("key", "turned warm in {his} hand"), ("feather", "floated up by itself")]
WISHES = [  # (narrated, spoken, what happened first, what happened then)
    ("to fly like a bird", "to fly like a bird", "{H} went up, up, up into the sky",
     "{he} flew over the houses and the trees"),
    ("for a mountain of candy", "for a mountain of candy", "candy fell from the sky",
     "soon there was candy everywhere, and {he} felt sick from eating too much"),
    ("to talk to animals", "to talk to animals", "a little bird said hello to {HO}",
     "{he} talked with a cat, a dog and a very chatty frog"),
    ("for {his} toys to come alive", "for my toys to come alive",
     "{his} teddy bear stood up and waved", "the toys danced and sang all around the room"),
    ("to be very big", "to be very big", "{H} grew taller than the trees",
     "{he} could see the whole town, but {he} could not fit in {his} house"),
    ("for a garden full of {f_foods}", "for a garden full of {f_foods}",
     "{f_plants} grew up all around {HO}", "{he} picked {f_foods} until {his} basket was full"),
]


def plot_magic(s):
    item, sign = s.pick(MAGIC)
    wish, spoken, first, then = s.pick(WISHES)
    s.v.update(item=item, sign=sign, wish=wish, wish_said=spoken, wfirst=first, wthen=then)
    begin(s)
    s.para()
    s.add(["One day, {H} found an old {item} under a big tree.",
           "One evening, {H} saw something shiny in the grass. It was a little {item}.",
           "One day, {H} was digging in the garden and found a strange {item}."])
    s.add(["When {he} picked it up, it {sign}.", "Suddenly, the {item} {sign}."])
    s.add(['"It is magic!" whispered {N}.', '"Wow," said {N}. "A magic {item}!"'])
    s.add(['{H} closed {his} eyes and wished {wish}.',
           '"I wish {wish_said}," said {N}. Then {he} held the {item} tight.'])
    s.para()
    s.add(["And then, {wfirst}!", "Poof! {wfirst}!"])
    s.add(["It was so much fun. {wthen}.", "At first it was great. {wthen}."])
    s.add(["But after a while, {H} missed {his} home and {his} family.",
           "But then {H} thought of {O}. {H} wanted to share the magic.",
           "But soon {H} was tired, and {he} wanted things to be normal again."])
    s.para()
    s.add(['"I wish everything was like before," said {N}.',
           '{H} held the {item} and made one more wish: for things to be as they were.'])
    s.add(["Poof! {H} was back at home.", "And just like that, everything was normal again."])
    s.say(['"Where were you, {N}?" asked {O}.', '{O} was there, smiling at {HO}.'],
          ["{O} ran to {HO} and wagged {ohis} tail."])
    s.add(["{H} put the {item} in a safe place. Maybe one day {he} would use it again.",
           "{H} smiled. Magic was fun, but home was the best."])
    ending(s, "magic")


def plot_visit(s):
    s.v["relative"], s.v["rel_home"] = s.pick([r for r in [
        ("grandma", "a little house by the sea"), ("grandpa", "a big farm"),
        ("aunt", "a tall house in the city"), ("uncle", "a cabin in the woods"),
        ("nana", "a cottage with a red roof"), ("granny", "a house with a big garden")]
        if r[0] != s.o.kind])
    s.v["ride"] = s.pick(["by car", "on a long train", "on a big bus", "in a little boat"])
    s.v["there"] = s.pick([
        "fed the chickens and found {f_num} brown eggs",
        "picked {f_foods} from the trees", "watched the boats go by",
        "looked at old {f_things} in the attic", "walked to the lake and threw stones in the water",
        "baked bread and ate it warm with {f_mass}"])
    bind_flavour(s)
    begin(s)
    s.para()
    s.add(["One summer, {H} went to visit {his} {relative}.",
           'One day, {O} said, "Today we will visit your {relative}, {N}!"',
           "{H} had not seen {his} {relative} for a long time."])
    s.add(["{HP} {relative} lived in {rel_home}.", "They went {ride} to {rel_home}."])
    s.maybe(0.5, ["On the way, {H} looked out the window and saw {f_animals} and {f_plants}.",
                  "The trip was long, and {H} asked, \"Are we there yet?\" many times."])
    s.add(['When they got there, {his} {relative} gave {HO} a big hug. "Hello, {N}!"',
           '{HP} {relative} was waiting at the door. "Come in, {N}!"'])
    s.para()
    s.add(["Together, they {there}.", "That day, {H} and {his} {relative} {there}."])
    s.maybe(0.5, ["Then {his} {relative} told {HO} a story about the old days.",
                  "{HP} {relative} showed {HO} an old photo of {Os} {f_family}."])
    s.add(["{H} had so much fun that {he} did not want to go home.",
           '"Can I stay one more day?" asked {N}.'])
    s.add(['"You can come back soon, {N}," said {his} {relative}.',
           "{HP} {relative} smiled and gave {HO} a jar of {f_mass} to take home."])
    ending(s, "visit")


def plot_lost_child(s):
    s.v["place"], s.v["see"] = s.pick([
        ("market", "a man selling {colour} balloons"), ("store", "a shelf full of toys"),
        ("fair", "a clown juggling balls"), ("zoo", "a funny monkey"),
        ("beach", "a big sandcastle"), ("park", "a man making giant bubbles")])
    s.v["helper"], s.v["helper_n"] = s.pick([
        ("a kind lady", "lady"), ("a police officer", "officer"),
        ("a friendly man", "man"), ("a woman from a shop", "woman")])
    begin(s)
    s.para()
    s.add(["One day, {H} went to the {place} with {O}.",
           'One Saturday, {O} said, "Stay close to me at the {place}, {N}."'])
    s.add(["There were so many people and so many things to see.",
           "The {place} was big and busy."])
    s.add(["Then {H} saw {see}. {he} walked over to look.",
           "{H} saw {see} and went to see it."])
    s.add(["When {he} turned around, {O} was gone!",
           "When {H} looked back, {he} could not see {O} anywhere."])
    s.add(["{H} was {scared}. {HP} lip began to shake.",
           '"{Ov}? {Ov}, where are you?" called {N}.'])
    s.para()
    s.add(["Then {helper} saw {HO}. \"Are you lost?\"",
           "{H} remembered what to do. {he} went to {helper} and said, \"I am lost.\""])
    s.add(['"What is your name?" asked the {helper_n}. "My name is {N}," said {N}.',
           '"Don\'t worry," said the {helper_n}. "We will find your family."'])
    s.add(["They looked and looked.", "The {helper_n} helped {HO} look."])
    s.add(['Then {H} heard a voice. "{N}! {N}!" It was {O}!',
           "Soon {H} saw {O} running to {HO}."])
    s.add(["{H} ran and hugged {O} tight.", "{O} picked {HO} up and held {HO} close."])
    s.add(['"I am sorry, {Ov}," said {N}. "I will stay close next time."',
           '"I was so worried, {N}," said {O}.'])
    ending(s, "lost_child")


def plot_cheer(s):
    s.v["why"], s.v["why_said"] = s.pick([
        ("{ohis} balloon had flown away", "my balloon flew away"),
        ("it was raining again", "it is raining again"),
        ("{ohis} best toy was lost", "I lost my best toy"),
        ("{ohe} missed {ohis} grandma", "I miss my grandma"),
        ("nobody wanted to play with {ohim}", "nobody wants to play with me"),
        ("{ohis} sandcastle fell down", "my sandcastle fell down")])
    begin(s)
    s.para()
    s.add(["One day, {H} saw that {O} was sad.", "One morning, {O} did not smile at all.",
           "One afternoon, {H} found {O} sitting alone."])
    s.add(['"What is wrong, {Ov}?" asked {N}.', '{H} sat down next to {OO}.'])
    s.add(['{O} said that {why}.', '"I am sad because {why_said}," said {O}.'])
    s.add(["{H} wanted to help {OO} feel better.", "{H} thought and thought."])
    s.para()
    tries = ["{H} told a funny joke about {a:f_animal} in a hat.",
             "{H} made a silly face and hopped like a frog.",
             "{H} sang a song about {f_num} little {f_animals}.",
             "{H} drew a picture of the two of them holding hands.",
             "{H} gave {OO} half of {his} {f_food}.",
             "{H} did a wobbly little dance."]
    s.rng.shuffle(tries)
    s.add(tries[0])
    s.maybe(0.6, ["But {O} was still sad.", "{O} did not laugh."])
    s.add(tries[1])
    s.add(["Then {O} began to smile.", "{O} giggled. Then {ohe} laughed out loud.",
           "This time, {O} smiled a big smile."])
    s.add(['"Thank you, {N}," said {O}. "You are a good friend."',
           '"You always make me happy, {N}," said {O}.'])
    s.add(["They played together until dinner.", "Soon they were both laughing."])
    ending(s, "cheer")


def plot_party(s):
    s.v["cake"] = s.pick(["a big chocolate cake", "a pink cake with {colour} flowers",
                          "a cake shaped like {a:f_animal}", "a tall cake with {age} candles"])
    s.v["oops"], s.v["fix"] = s.pick([
        ("the cake fell on the floor", "they ate cookies and fruit instead"),
        ("all the balloons flew away", "they made paper hats and danced"),
        ("it started to rain", "they played games inside"),
        ("the dog ate the sandwiches", "they made new ones, even better")])
    bind_flavour(s)
    begin(s)
    s.para()
    s.add(["Today was {Ns} birthday!", "It was {Ns} birthday, and {he} was {age} years old."])
    s.add(["{H} woke up early and jumped out of bed.",
           "There were {colour} balloons all over the house."])
    s.add(["{O} made {cake}.", "On the table, there was {cake}."])
    s.add(["Soon {Ns} friends came to the party.", "Many friends came to play."])
    s.para()
    s.add(["They played games and sang songs.", "They danced and played hide and seek."])
    s.add(["But then {oops}!", "Oh no! Then {oops}."])
    s.add(['"My party!" cried {N}.', '{H} was {sad} for a moment.'])
    s.add(["So {fix}.", "Then {O} had an idea: {fix}."])
    s.add(["It was even more fun!", "Everyone laughed."])
    s.para()
    s.add(['Everyone sang, "Happy birthday, dear {N}!"',
           '"Happy birthday, {N}!" said {O}.'])
    s.add(["{H} made a wish and blew out the candles.",
           "{H} opened {his} presents. There was {a:tadj} {f_thing} and a book about {f_animals}."])
    ending(s, "party")


# Plot, weight, and the kinds of second character it can have.
PLOTS = [
    (plot_lost, 3, ["friend", "sibling", "pet", "parent"]),
    (plot_stuck, 3, ["parent", "friend", "sibling", "animal"]),
    (plot_broken, 2, ["parent", "friend", "sibling"]),
    (plot_share, 2, ["friend", "sibling"]),
    (plot_help_animal, 3, ["friend", "parent", "sibling", "pet"]),
    (plot_fear, 2, ["parent", "friend", "sibling"]),
    (plot_disobey, 2, ["parent"]),
    (plot_gift, 2, ["parent", "friend"]),
    (plot_new_friend, 2, ["friend", "animal"]),
    (plot_garden, 2, ["parent", "friend", "sibling"]),
    (plot_weather, 2, ["parent", "friend", "sibling", "pet"]),
    (plot_game, 2, ["friend", "sibling"]),
    (plot_trip, 2, ["parent", "friend", "sibling"]),
    (plot_wish, 1, ["parent"]),
    (plot_noise, 1, ["parent", "sibling", "pet"]),
    (plot_learn, 2, ["parent", "friend", "sibling"]),
    (plot_bake, 1, ["parent", "friend", "sibling"]),
    (plot_clean, 1, ["parent", "sibling"]),
    (plot_find, 2, ["friend", "parent", "sibling", "pet"]),
    (plot_snow, 2, ["friend", "sibling", "parent"]),
    (plot_sick, 1, ["parent", "friend", "pet"]),
    (plot_magic, 2, ["friend", "sibling", "pet", "parent"]),
    (plot_visit, 1, ["parent"]),
    (plot_lost_child, 1, ["parent"]),
    (plot_cheer, 2, ["friend", "sibling"]),
    (plot_party, 1, ["parent", "friend", "sibling"]),
]


# ---------------------------------------------------------------- characters

HELPER_ANIMALS = {"plot_stuck": ["bird", "owl", "squirrel", "monkey", "big bird"],
                  "plot_new_friend": ["frog", "bird", "turtle", "duck", "bunny",
                                      "squirrel", "mouse", "ladybug", "fish"]}
PARENTS = [("Mom", "mom", "f")] * 5 + [("Dad", "dad", "m")] * 3 + \
          [("Grandma", "grandma", "f"), ("Grandpa", "grandpa", "m")]
SIBLINGS = {"f": ["little sister", "big sister"], "m": ["little brother", "big brother"]}
PETS = ["dog", "dog", "cat", "puppy", "kitten"]


def make_hero(rng, name, gender):
    """The hero: mostly a child, sometimes an animal."""
    if rng.random() < 0.2:
        return Char(name, gender, rng.choice(ANIMAL_KINDS), "hero")
    return Char(name, gender, rng.choice(CHILD_KINDS[gender]), "hero")


def common_name_except(rng, name):
    while True:
        other, gender = rng.choice(COMMON_NAMES)
        if other != name:
            return other, gender


def make_other(rng, role, hero, plot):
    """The second character of the story, of the given role."""
    animal_hero = is_animal(hero)
    if role == "pet" and animal_hero:
        role = "friend"
    if role == "parent":
        title, kind, gender = rng.choice(PARENTS)
        return Char(None, gender, kind, role, title)
    if role == "animal":
        return Char(None, "n", rng.choice(HELPER_ANIMALS[plot.__name__]), role)
    if role == "pet":
        name, gender = rng.choice(PET_NAMES)
        return Char(name, gender, rng.choice(PETS), role)
    name, gender = common_name_except(rng, hero.name)
    if role == "sibling":
        kind = rng.choice(SIBLINGS[gender])
    elif animal_hero:
        kind = rng.choice(ANIMAL_KINDS)
    else:
        kind = "girl" if gender == "f" else "boy"
    return Char(name, gender, kind, role)


# ---------------------------------------------------------------- whole stories

FIRST_SENTENCE = re.compile(r'^.*?[.!?](?=\s|$)', re.S)


def first_sentence(text):
    m = FIRST_SENTENCE.match(text)
    return m.group(0) if m else text


def name_count(text, name):
    return len(re.findall(r"\b%s\b" % re.escape(name), text))


def acceptable(text, name):
    """Length in range; hero named in the first sentence and twice more later."""
    first = first_sentence(text)
    return (250 <= len(text) <= 2500 and name_count(first, name) >= 1
            and name_count(text[len(first):], name) >= 2)


def write_story(rng, name, gender):
    """One story whose hero has this name; tries again until it is acceptable."""
    plots = [p for p in PLOTS for _ in range(p[1])]
    while True:
        plot, _, roles = rng.choice(plots)
        hero = make_hero(rng, name, gender)
        other = make_other(rng, rng.choice(roles), hero, plot)
        s = Story(rng, hero, other)
        s.used_plots.append(plot.__name__)
        plot(s)
        if rng.random() < 0.22:
            second_episode(s)
            if rng.random() < 0.25:
                second_episode(s)
        text = s.text()
        if acceptable(text, name):
            return text


def second_episode(s):
    """A longer story: the same two characters in another adventure."""
    fits = [p for p, w, roles in PLOTS
            if s.o.role in roles and p.__name__ not in s.used_plots]
    if not fits or s.o.role == "animal":
        return
    plot = s.pick(fits)
    s.used_plots.append(plot.__name__)
    kept = {k: s.v[k] for k in ("kid", "kind", "obj", "objd", "introduced") if k in s.v}
    s.v = dict(kept, begun="yes")
    s.para()
    s.add(["That was not the only adventure for {N}.",
           "{N} had many more adventures after that.",
           "But the story of {N} does not end here.",
           "There is one more thing to tell about {N}."])
    s.v["no_para"] = "yes"
    plot(s)


def generate(seed, n):
    rng = random.Random(seed)
    plan = plan_names(rng, n)
    return [write_story(rng, name, gender) for name, gender, _ in plan], plan


# ---------------------------------------------------------------- checking a file

OPENING_WORDS = {"Once", "One", "There", "In", "This", "Long", "Every", "A", "The", "It"}


def hero_of(story):
    """The hero's name read back from the text: the capitalised word of the
    first sentence (not an opening word) that the story uses most."""
    first = first_sentence(story)
    words = re.findall(r"\b[A-Z][a-z]+\b", first)
    names = [w for w in words if w not in OPENING_WORDS]
    if not names:
        return None
    return max(names, key=lambda w: (name_count(story, w), -names.index(w)))


def name_class(name):
    if name in set(n for n, _ in COMMON_NAMES):
        return "common"
    if name in set(n for n, _ in RARE_NAMES):
        return "rare"
    return "invented"


def check(path):
    """Print what the file holds and how its heroes are named; 0 if all is well."""
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    stories = text[:-1].split("\n" + SEPARATOR + "\n") if text.endswith("\n") else [text]
    lengths = [len(st) for st in stories]
    good, uses = 0, {}
    for st in stories:
        name = hero_of(st)
        later = name_count(st[len(first_sentence(st)):], name) if name else 0
        if name and later >= 2:
            good += 1
        uses.setdefault(name, 0)
        uses[name] += 1
    by_class = {"common": [], "rare": [], "invented": []}
    for name in sorted(uses, key=str):
        by_class[name_class(name) if name else "invented"].append(uses[name])
    ascii_share = sum(1 for b in raw if b < 128) / float(len(raw))
    print("file: %s" % path)
    print("bytes: %d  stories: %d  ascii: %.4f  ends with newline: %s" % (
        len(raw), len(stories), ascii_share, text.endswith("\n")))
    print("length: mean %.1f  min %d  max %d  (characters)" % (
        sum(lengths) / float(len(lengths)), min(lengths), max(lengths)))
    print("hero named in the first sentence and at least twice more: %d / %d (%.2f%%)" % (
        good, len(stories), 100.0 * good / len(stories)))
    for cls, counts in sorted(by_class.items()):
        if counts:
            print("%-8s names: %4d distinct, %5d stories; stories per name: min %d, mean %.1f, max %d"
                  % (cls, len(counts), sum(counts), min(counts),
                     sum(counts) / float(len(counts)), max(counts)))
    return 0 if good == len(stories) else 1


# ---------------------------------------------------------------- command line

def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    default_out = os.path.join(root, "data", "stories.txt")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--stories", type=int, default=6000, help="how many stories (default 6000)")
    ap.add_argument("--out", default=default_out, help="file to write (default data/stories.txt)")
    ap.add_argument("--check", metavar="PATH", help="only check an existing stories file")
    args = ap.parse_args(argv)
    if args.check:
        return check(args.check)
    if args.stories < 1:
        ap.error("--stories must be at least 1")
    stories, _ = generate(args.seed, args.stories)
    data = ("\n" + SEPARATOR + "\n").join(stories) + "\n"
    tmp = args.out + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
        os.replace(tmp, args.out)
    except OSError as e:
        print("error: cannot write %s: %s (does its folder exist?)" % (args.out, e.strerror),
              file=sys.stderr)
        return 1
    print("wrote %d stories, %d bytes to %s" % (len(stories), len(data.encode("utf-8")), args.out),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
