"""`stimkit init DIR`: a small study that runs as it is (`cd DIR && stimkit run`): word lists,
one template set, a word test and a sentence test, and a study file with every key commented."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from ..errors import InputError, UsageError

STUDY = '''\
# A stimkit study: every command run in this folder (or one below it) reads this file.
# `stimkit run` runs it; `stimkit test`, `baseline`, `audit`, `results`, `check` and `report`
# take their folders, encoders, alpha and baseline from it. A flag on the command line
# overrides a key here; --study FILE or $STIMKIT_STUDY name another study file.

{name}                          # recorded on each run: `report` finds the study's runs
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

# [replicates]                           # a family of replicates (one model trained again): encoders = ["replicates:mb"]
# mb = ["hf:google/multiberts-seed_0", "hf:google/multiberts-seed_1"]   # `stimkit train` families: "trained:NAME"

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


# explicit bidi embeddings, overrides and isolates: they reorder what a terminal shows after them
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# what init adds to the folder, each refused when the folder has it already (a file, a folder or a link)
TOP = ("study.toml", "wordlists", "templates", "tests")


def name_line(name: str) -> str:
    """`name = "..."` as a TOML writer writes it (quotes and backslashes escaped): a name is a
    value, never text pasted into the file. One line, no control characters."""
    import unicodedata

    import tomli_w

    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI_CONTROLS), None)
    if bad is not None:
        raise UsageError(f"study name {name!r}: a name is one line without control characters or bidi overrides "
                         f"(it has U+{ord(bad):04X})")
    return tomli_w.dumps({"name": name}).rstrip("\n")


def init(folder: str | Path, name: str | None = None) -> list[Path]:
    """Write the starter study into `folder`, all or nothing: refused where the folder is a
    link or already holds a study file, `wordlists`, `templates` or `tests` (as a file, a folder
    or a link: nothing is written through a link). The files are written into a new private
    folder (beside `folder`, or inside it when it exists), then moved in by renames and hard
    links, which never follow a link or replace a file; a failure
    (a blocked path, a full disk) removes what was written, so a retry starts clean.
    Returns the files written."""
    root = Path(os.path.abspath(folder))
    text = STUDY.format(name=name_line(name or root.name or "my-study"))
    files = {TOP[0]: text, **FILES}
    if root.is_symlink():
        raise UsageError(f"{folder}: a link: `stimkit init` writes only into a real folder, never through a link")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if root.exists():
        taken = next((t for t in TOP if os.path.lexists(root / t)), None)
        if taken:
            raise UsageError(f"{Path(folder) / taken} exists: `stimkit init` writes a new study into a folder without "
                             f"{', '.join(TOP)}")
    made = _parents(root.parent, folder)
    staged = None
    try:
        # 0700 while it is written: no one else can put a link into it. Beside a new folder
        # (moved there whole), inside one that exists (its parent need not be writable);
        # either way on its file system, so moved in by renames
        whole = not root.exists()
        staged = Path(tempfile.mkdtemp(prefix=f".{root.name}.", suffix=".init", dir=root.parent if whole else root))
        _fill(staged, files)
        _move_in(staged, root, whole)
    except OSError as e:
        _remove(staged)
        for parent in reversed(made):  # folders made for it, if still empty
            try:
                parent.rmdir()
            except OSError:
                break
        why = e.strerror or type(e).__name__
        raise InputError(f"{folder}: cannot write the study ({why}{f': {e.filename}' if e.filename else ''}); "
                         "nothing was written") from None
    except BaseException:
        _remove(staged)
        raise
    return [Path(folder) / relative for relative in files]


def _parents(parent: Path, folder) -> list[Path]:
    """Make the missing folders above the study's (as `mkdir -p`); returns those made."""
    missing = []
    for p in (parent, *parent.parents):
        if os.path.lexists(p):
            break
        missing.append(p)
    made = []
    try:
        for p in reversed(missing):
            p.mkdir()
            made.append(p)
    except OSError as e:
        for p in reversed(made):
            p.rmdir()
        raise InputError(f"{folder}: cannot make the folder {p} ({e.strerror or type(e).__name__}); nothing was written") from None
    return made


def _fill(staged: Path, files: dict[str, str]) -> None:
    """The study's files written into the staging folder, its mode then the usual (0777 less
    the umask)."""
    for relative, text in files.items():
        path = staged / relative
        for folder in reversed(path.relative_to(staged).parents[:-1]):
            if not (staged / folder).is_dir():
                os.mkdir(staged / folder)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # a full disk is found here, not after the move
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staged, 0o777 & ~umask)


def _move_in(staged: Path, root: Path, whole: bool) -> None:
    """Move the staged study to `root`: the whole folder (`whole`: `root` was missing), else
    each top-level entry into it, none replacing anything; undone if one fails."""
    if whole:
        os.rename(staged, root)  # replaces nothing but an empty folder made meanwhile; a link there: ENOTDIR
        return
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))  # names below are in it
    moved = []
    try:
        for entry in sorted(os.listdir(staged)):
            if (staged / entry).is_dir():  # a folder moves whole; onto a link or a file: ENOTDIR
                os.rename(staged / entry, entry, dst_dir_fd=fd)
            else:
                _link(staged / entry, entry, fd)
            moved.append(entry)
    except OSError:
        for entry in reversed(moved):
            if (staged / entry).exists():
                os.unlink(entry, dir_fd=fd)
            else:
                os.rename(entry, staged / entry, src_dir_fd=fd)
        raise
    finally:
        os.close(fd)
    _remove(staged)


def _link(source: Path, name: str, fd: int) -> None:
    """`source` as `name` in the folder `fd`, replacing nothing: a hard link fails where
    anything is (a dangling link too); a file system without hard links checks, then renames."""
    try:
        os.link(source, name, dst_dir_fd=fd, follow_symlinks=False)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        try:
            os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            os.rename(source, name, dst_dir_fd=fd)
            return
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name) from None


def _remove(staged: Path | None) -> None:
    """The staging folder and all in it (links are removed, never followed)."""
    import shutil

    if staged is not None and os.path.lexists(staged):
        shutil.rmtree(staged, ignore_errors=True)
