"""Tan & Celis 2019: the layout of Tables 7 and 8, and the paper's main job.

Tables 7 and 8 show each test (a row of the paper: C1..C10 from May et al., +C11.. from
Tan & Celis) as up to five encodings -- word, sent, sent (u), c-word, c-word (u) -- by
encoder. A cell is d, with `*` when the test is significant after the chosen correction.
A c-word cell also carries the paper's comparison with its sentence cell:
"✓" significant with c-word only, "✗" with sent only, "▲" with both.
"NA": the encoder gives no c-word vectors (static word vectors, sentence-only encoders).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from .. import StimkitError, encoders
from ..catalog import tests as catalog
from ..run import cword, runner
from .. import store as store_sql
from ..catalog.tests import TestDef

if TYPE_CHECKING:
    from ..api import Store
    from .mainjob import MainJob

PAPER = "tan-celis-2019"
ENCODINGS = ("word", "sent", "sent (u)", "c-word", "c-word (u)")
MARKS = {(True, False): "✓", (False, True): "✗", (True, True): "▲"}  # (c-word, sent) significant
JOB_ENCODERS = ("glove-6b-50d", "minilm", "use-m3")

# The paper's rows in order: (section, catalog family, row label as printed).
ROWS = [
    ("Neutral", "C1", "C1: Flowers/Insects, P/U"),
    ("Neutral", "C2", "C2: Instruments/Weapons, P/U"),
    ("Disability, Age", "C9", "C9: Mental/Phys, Temp/Perm"),
    ("Disability, Age", "C10", "C10: Young/Old Names, P/U"),
    ("Gender", "C6", "C6: M/F Names, Career/Family"),
    ("Gender", "C6b", "C6b: M/F Terms, Career/Family"),
    ("Gender", "C7", "C7: Math/Arts, M/F Terms"),
    ("Gender", "C7b", "C7b: Math/Arts, M/F Names"),
    ("Gender", "C8", "C8: Science/Arts, M/F Terms"),
    ("Gender", "C8b", "C8b: Science/Arts, M/F Names"),
    ("Gender", "+C11", "+C11: M/F Names, P/U"),
    ("Gender", "+Occ", "+Occ: M/F Names, Occ Terms"),
    ("Gender", "Double Bind M/F (Competent)", "Double Bind M/F (Competent)"),
    ("Gender", "Double Bind M/F (Likable)", "Double Bind M/F (Likable)"),
    ("Race", "C3", "C3: EA/AA Names, P/U"),
    ("Race", "C3b", "C3b: EA/AA Terms, P/U"),
    ("Race", "C4", "C4: EA/AA Names, P/U"),
    ("Race", "C5", "C5: EA/AA Names, P/U"),
    ("Race", "C5b", "C5b: EA/AA Terms, P/U"),
    ("Race", "+C12", "+C12: EA/AA Names, Career/Family"),
    ("Race", "+C13", "+C13: EA/AA Names, Science/Arts"),
    ("Race", "+Double Bind EA/AA (Competent)", "+Double Bind EA/AA (Competent)"),
    ("Race", "+Double Bind EA/AA (Likable)", "+Double Bind EA/AA (Likable)"),
    ("Intersectional", "+I1", "+I1: (F) EA/AA Names, P/U"),
    ("Intersectional", "+I2", "+I2: (AA) M/F Names, P/U"),
    ("Intersectional", "+I3", "+I3: (M) EA/AA Names, P/U"),
    ("Intersectional", "+I4", "+I4: (EA) M/F Names, P/U"),
    ("Intersectional", "+I5", "+I5: EA M/AA F Names, P/U"),
    ("Intersectional", "ABW Stereotype Names", "ABW Stereotype Names"),
    ("Intersectional", "ABW Stereotype Terms", "ABW Stereotype Terms"),
]
FAMILIES = [family for _, family, _ in ROWS]


def encoding(test: TestDef, context: str) -> str:
    """A result's column in the paper: its context, "(u)" for unbleached sentences."""
    if context == "word":
        return "word"
    base = "sent" if context == "sentence" else "c-word"  # token pooling by hand counts as c-word
    return f"{base} (u)" if test.unbleached else base


def paper_tests(tests: dict[str, TestDef] | None = None) -> list[TestDef]:
    """The tests behind Tables 7 and 8: Tan & Celis's own, and May et al.'s for the C rows.
    The authors' three identical word-level files of a double bind are run once (the first)."""
    tests = tests if tests is not None else catalog.load_toml()
    chosen, seen = [], set()
    for t in tests.values():
        if t.family not in FAMILIES:  # (May et al.'s own ABW and double binds have families of their own)
            continue
        key = (t.family, encoding(t, t.context))
        if key not in seen:
            seen.add(key)
            chosen.append(t)
    return chosen


def layout(df: pl.DataFrame, tests: dict[str, TestDef], encoder_order: list[str] | None = None) -> pl.DataFrame:
    """Tables 7/8 from a corrected results frame (columns test, encoder, context, effect_size,
    rejected; the latest result wins where a test ran twice): one row per test and encoding,
    one column per encoder."""
    missing = {"test", "encoder", "context", "effect_size", "rejected"} - set(df.columns)
    if missing:
        raise StimkitError(f"results frame lacks column(s) {', '.join(sorted(missing))}")
    if "created_at" in df.columns:
        df = df.sort("created_at")
    cells: dict[tuple[str, str, str], tuple[float, bool]] = {}
    for r in df.iter_rows(named=True):
        test = tests.get(r["test"])
        if test is None or test.family not in FAMILIES:
            continue
        cells[(test.family, encoding(test, r["context"]), r["encoder"])] = (r["effect_size"], bool(r["rejected"]))
    present = list(dict.fromkeys(df["encoder"].to_list()))
    encs = [e for e in (encoder_order or []) if e in present] + [e for e in present if e not in (encoder_order or [])]
    with_cword = {e for (_, enc_name, e) in cells if enc_name.startswith("c-word")}
    rows = []
    for section, family, label in ROWS:
        for enc_name in ENCODINGS:
            if not any((family, enc_name, e) in cells for e in encs):
                continue
            row = {"section": section, "test": label, "encoding": enc_name}
            for e in encs:
                row[e] = cell(cells, family, enc_name, e, e in with_cword)
            rows.append(row)
    return pl.DataFrame(rows, schema={c: pl.String for c in ["section", "test", "encoding", *encs]})


def cell(cells: dict, family: str, enc_name: str, encoder: str, has_cword: bool) -> str:
    got = cells.get((family, enc_name, encoder))
    if got is None:
        return "NA" if enc_name.startswith("c-word") and not has_cword else ""
    d, significant = got
    text = f"{d:+.2f}" + ("*" if significant else "")
    if enc_name.startswith("c-word"):
        sent = cells.get((family, enc_name.replace("c-word", "sent"), encoder))
        if sent is not None:
            text += MARKS.get((significant, sent[1]), "")
    return text


def run_job(store: Store, specs: list[str] | None = None, opts: runner.Options | None = None,
            log: Callable[[str], None] | None = None, progress=None) -> MainJob:
    """`stimkit run --paper tan-celis-2019`: generate the catalog, then every paper test on every
    encoder in its own context, and every sentence test as c-word on each encoder that has
    token vectors (the others are NA). Encoding first (the store open only for each append),
    then the statistics in one run, all or nothing; Holm over that run."""
    from .mainjob import MainJob, generate_catalog

    started = time.perf_counter()
    log = log or (lambda line: None)
    opts = opts or runner.Options()
    opts.validate()
    con = store.con
    generated = generate_catalog(con)
    tests = paper_tests()
    encs = [encoders.resolve(s) for s in (specs or JOB_ENCODERS)]
    cword_tests = [cword.in_context(t, "c-word") for t in tests if t.context == "sentence"]
    capable = []
    for enc in encs:
        try:
            encoders.token_variant(enc)
            capable.append(enc)
        except StimkitError:
            log(f"{enc.spec}: no c-word vectors (NA)")
    for r in store.prepare_vectors(tests + (cword_tests if capable else []), [e.spec for e in encs], opts,
                                   progress=progress):
        log(f"encoded {r['encoder']}: {r['cached']} cached, {r['encoded']} new in {r['seconds']:.1f}s")
    con = store.con  # (reopened after encoding)
    sets = {t.name: catalog.fetch_sets(con, t) for t in tests}
    token_encs = cword.encoders_for(cword_tests, capable, sets) if cword_tests and capable else []
    plan = [(t, e) for e in encs for t in tests] + [(t, e) for e in token_encs for t in cword_tests]
    rows = []
    with store_sql.transaction(con):
        run_id = runner.start_run(con, f"run --paper {PAPER}", opts.seed)
        for test, enc in plan:
            rows.append(runner.run_one(con, run_id, test, enc, opts, sets[test.name], encode=False))
    log(f"{len(plan)} results in {time.perf_counter() - started:.1f}s")
    job = MainJob(generated, runner.RunReport(run_id, rows, [], opts.alpha, len(tests) + len(cword_tests), len(encs)))
    job.results = store.results(run=run_id, correct="holm", alpha=opts.alpha)
    job.family = store.family
    job.seconds = time.perf_counter() - started
    return job
