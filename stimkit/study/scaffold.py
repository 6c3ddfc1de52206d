"""`stimkit init DIR`: a small study that runs as it is (`cd DIR && stimkit run`): word lists,
one template set, a word test and a sentence test, and a study file with every key commented."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

STUDY = '''\
# A stimkit study: every command run in this folder (or one below it) reads this file.
# `stimkit run` runs it; `stimkit test`, `baseline`, `audit`, `results`, `check` and `report`
# take their folders, encoders, alpha and baseline from it. A flag on the command line
# overrides a key here; --study FILE or $STIMKIT_STUDY name another study file.

name = "{name}"                          # recorded on each run: `report` finds the study's runs
description = "Sweets vs vegetables, pleasant vs unpleasant: a study to start from"
tests = ["sweets-*"]                     # test names or shell patterns (from `catalog` and the catalog's)
# paper = "may-2019"                     # or: every test a paper published
contexts = ["own"]                       # own | c-word (also each sentence test's inserted word)
encoders = ["glove-6b-50d"]              # encoder specs (`stimkit encoders`)
correction = "holm"                      # holm | bonferroni | bh | by | none
alpha = 0.05                             # every view of this study judges at it: p <= alpha
# wefat = ["*"]                          # catalog WEFATs to run on each encoder
checks = true                            # consistency checks over the study's results (`stimkit check`)
wordlists = "wordlists"                  # your folders, relative to this file
templates = "templates"
catalog = "tests"
# override = true                        # your lists, templates and tests may replace built-in ones of their name

# [display]                              # encoders' display names, for tables and the report
# "glove-6b-50d" = "GloVe"

[options]                                # the procedure (as `stimkit test --help` lists it)
budget = 10000                           # permutation samples
seed = 0
# alternative = "greater"                # greater | less | two-sided
# units = "words"                        # sentences | words (a sentence test's unit)
# bootstrap = 0
# [options."sweets-pleasant-sent"]       # one test (a name or pattern): units, alternative
# units = "sentences"

# [baseline]                             # a matched random baseline per result (`stimkit baseline`)
# sets = 200                             # K random pairs
# seed = 0
# tolerance = 0.25                       # Zipf distance between a drawn word and its target
# vocabulary = "names.txt"               # a word list (one a line); name lists draw given names
# language = "en"

[table]
layout = "table4"                        # table4 | tan-celis (with rows = [[section, paper_test, label], ...])
# heads = "category"                     # head rows by the test's categories (X vs Y / A vs B), not its name
'''

FILES = {
    "wordlists/food.toml": '''\
# Word lists: [name] with its words; `kind` tells the templates how to use a word.
[sweets]
category = "Sweets"
description = "Sweet foods"
source = "stimkit init"
kind = "count_noun"
words = ["cake", "candy", "cookie", "pie", "muffin", "donut", "cupcake", "brownie"]

[vegetables]
category = "Vegetables"
description = "Vegetables"
source = "stimkit init"
kind = "count_noun"
words = ["carrot", "cabbage", "onion", "turnip", "radish", "potato", "cucumber", "beet"]

[pleasant_traits]
category = "Pleasant"
description = "Pleasant adjectives"
source = "stimkit init"
kind = "adjective"
words = ["happy", "lovely", "pleasant", "wonderful", "delightful", "nice", "joyful", "cheerful"]

[unpleasant_traits]
category = "Unpleasant"
description = "Unpleasant adjectives"
source = "stimkit init"
kind = "adjective"
words = ["awful", "nasty", "horrible", "terrible", "unpleasant", "dreadful", "gross", "miserable"]
''',
    "templates/simple/_set.toml": 'description = "four plain sentences a kind of word (the study\'s own template set)"\n',
    "templates/simple/count_noun.j2": '''\
{# A word of kind count_noun goes through these: one sentence a line. #}
This is {{ singular|a }}.
That is {{ singular|a }}.
There is {{ singular|a }} here.
Here is {{ singular|a }}.
''',
    "templates/simple/adjective.j2": '''\
It is {{ word }}.
That is {{ word }}.
This is {{ word }}.
They are {{ word }}.
''',
    "tests/food.toml": '''\
# The study's tests: four sets X, Y, A, B (`list@word`: the words; `list@simple`: the
# words through the template set `simple`).
["sweets-pleasant"]
sets = ["sweets@word", "vegetables@word", "pleasant_traits@word", "unpleasant_traits@word"]
paper_test = "sweets"

["sweets-pleasant-sent"]
sets = ["sweets@simple", "vegetables@simple", "pleasant_traits@simple", "unpleasant_traits@simple"]
context = "sentence"
paper_test = "sweets"
''',
}


def init(folder: str | Path, name: str | None = None) -> list[Path]:
    """Write the starter study into `folder` (made if missing; refused where it already holds a
    study file or any file the scaffold would write). Returns the files written."""
    from .study import STUDY_FILE

    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: not a folder")
    files = {STUDY_FILE: STUDY.format(name=name or root.resolve().name or "my-study"), **FILES}
    taken = [p for p in files if (root / p).exists()]
    if taken:
        raise UsageError(f"{root / taken[0]} exists: `stimkit init` writes a new study into an empty folder")
    written = []
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
