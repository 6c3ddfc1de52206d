"""False positives on random words: what each unit of inference rejects when nothing is there.

    python bench/bench_units.py [--draws 1000] [--pool 1500] [-e glove-6b-50d -e minilm] [--check 3]

A user's own sentence test on random words has no bias by construction. The setup (issue 31):
16 random common words (wordfreq's English ranks 1,000-10,000 that GloVe knows, none of them a
pleasant or unpleasant word) split 8/8 into X and Y; five bleached templates of our own that fit
any word ("The word is X.", ...); Caliskan's pleasant/unpleasant lists in the same templates
as A and B. Each draw runs, at alpha 0.01, one-sided (greater) and two-sided:

  word           the word test on the same 16 words (`list@word` sets)
  sentences      the sentence test with sentences as units (May et al. 2019's procedure)
  words          the sentence test with words as units (stimkit's default for a sentence test)
  crossed        the crossed random-effects model of words x templates (stimkit.stats.crossed,
                 when it is there; skipped with a line when it is not)

A pool of words is generated and encoded once per encoder through the store (`generate`,
`encode`); each draw picks its 16 words from it and computes the test through the run
layer's own function (run.association.compute) with default Options, resolved for the test as
`stimkit test` resolves them (the published tests' `units = "sentences"` aside): the figure
is the default procedure's. `--check N` runs N draws again through `Store.test` with no
option (ad-hoc sets of the draw's words) and asserts the same d and p.

The true rate of an exact permutation test is at most alpha; with n draws the rate's standard
error is sqrt(0.01 * 0.99 / n) (0.45 points at 500, 0.31 at 1,000). Printed: each procedure's
share of p <= 0.01 with its standard error, and the seconds taken.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ALPHA = 0.01
TEMPLATES = ["The word is {{ word }}.", "Here is {{ word }}.", "Someone said {{ word }}.", "It reads {{ word }}.",
             "Consider {{ word }}."]
ALTERNATIVES = ("greater", "two-sided")


def band_words(n: int, seed: int, exclude: set[str]) -> list[str]:
    """n random words of wordfreq's English ranks 1,000-10,000: letters only, two or more."""
    from wordfreq import top_n_list

    band = [w for w in top_n_list("en", 10_000)[1_000:] if w.isascii() and w.isalpha() and len(w) > 1 and w not in exclude]
    rng = np.random.default_rng(seed)
    return [band[i] for i in rng.choice(len(band), size=min(n, len(band)), replace=False)]


def write_inputs(folder: Path, lists: dict[str, list[str]]) -> tuple[Path, Path]:
    """Word lists (TOML) and the five-template set `bench5` in `folder`."""
    wl, tp = folder / "wordlists", folder / "templates" / "bench5"
    wl.mkdir(parents=True, exist_ok=True)
    tp.mkdir(parents=True, exist_ok=True)
    (tp / "default.j2").write_text("\n".join(TEMPLATES) + "\n")
    (wl / "bench.toml").write_text("".join(toml_list(name, words) for name, words in lists.items()))
    return wl, tp.parent


def toml_list(name: str, words: list[str]) -> str:
    """A word list in the built-in format (the words are letters only: no quoting needed)."""
    return f'[{name}]\nsource = "bench_units"\nwords = [{", ".join(chr(34) + w + chr(34) for w in words)}]\n'


def pool_frames(con, enc, names: list[str]) -> dict:
    """Per set: its stimuli (with word and template) and their vectors under `enc`."""
    from stimkit.encoders.embeddings import load, stimuli_of
    from stimkit.stimuli.sets import fetch, set_sql

    out = {}
    for name in names:
        frame = fetch(con, set_sql(name), name)
        vectors, _ = load(con, enc, stimuli_of([frame]))
        out[name] = (frame, vectors)
    return out


def pick(frame, vectors, words: list[str]):
    """The rows of these words, in the words' order and each word's template order."""
    import polars as pl

    order = {w: i for i, w in enumerate(words)}
    f = frame.with_row_index("_row").filter(pl.col("word").is_in(words)) \
        .with_columns(_w=pl.col("word").replace_strict(order, return_dtype=pl.Int64)).sort("_w", "ordinal")
    rows = f["_row"].to_numpy()
    return f.drop("_row", "_w"), vectors[rows]


def prepared(parts: dict):
    """A run.association.Prepared of four (frame, vectors) parts, balanced already (8 and 8 words)."""
    import polars as pl

    from stimkit.run.association import Prepared

    frames = {r: f.with_row_index("ordinal_in_set").with_columns(dropped=pl.lit(None, dtype=pl.String))
              for r, (f, _) in parts.items()}
    vectors = {r: v for r, (_, v) in parts.items()}
    return Prepared(frames, vectors, dict(frames), {r: (frames[r], vectors[r]) for r in ("x", "y")}, "none")


def crossed_p(prep, alternative: str):
    """The crossed model's p (stimkit.stats.crossed), or None when it is not there."""
    try:
        from stimkit.stats.crossed import crossed_fit
    except ImportError:
        return None
    from stimkit import stats

    s = stats.association(np.concatenate([prep.vectors["x"], prep.vectors["y"]]), prep.vectors["a"], prep.vectors["b"])
    fx, fy = prep.kept["x"], prep.kept["y"]
    is_x = np.r_[np.ones(fx.height, bool), np.zeros(fy.height, bool)]
    word = np.array(fx["word"].to_list() + fy["word"].to_list(), dtype=object)
    template = np.array(fx["template_id"].to_list() + fy["template_id"].to_list(), dtype=object)
    return crossed_fit(s, is_x, word, template, alternative=alternative).p


def run_encoder(store, spec: str, pool: list[str], draws: int, seed: int, check: int, lists_dir: Path,
                template_dir: Path) -> dict:
    from stimkit.catalog.definitions import TestDef
    from stimkit.encoders import resolve
    from stimkit.run.association import compute
    from stimkit.run.options import Options

    enc = resolve(spec)
    store.encode([spec], sets=[f"{n}@{t}" for n in ("pool", "pleasant", "unpleasant") for t in ("word", "bench5")])
    sets = pool_frames(store.con, enc, [f"{n}@{t}" for n in ("pool", "pleasant", "unpleasant") for t in ("word", "bench5")])
    known = set(sets["pool@word"][0].filter(np.isfinite(sets["pool@word"][1]).all(axis=1))["word"].to_list())
    words = [w for w in pool if w in known]
    attrs = {t: {r: sets[f"{n}@{t}"] for r, n in (("a", "pleasant"), ("b", "unpleasant"))} for t in ("word", "bench5")}
    procedures = {  # name: (template set, test context, options as `stimkit test` resolves them)
        "word": ("word", "word", {}),
        "sentences": ("bench5", "sentence", {"units": "sentences"}),
        "words": ("bench5", "sentence", {}),
    }
    rng = np.random.default_rng(seed)
    hits = {(p, a): 0 for p in [*procedures, "crossed"] for a in ALTERNATIVES}
    done = {(p, a): 0 for p in [*procedures, "crossed"] for a in ALTERNATIVES}
    seconds = {p: 0.0 for p in [*procedures, "crossed"]}
    checked = []
    for i in range(draws):
        chosen = list(rng.choice(words, size=16, replace=False))
        x, y = chosen[:8], chosen[8:]
        name = f"bench-draw-{i}"
        for proc, (tset, context, given) in procedures.items():
            test = TestDef(name, (f"x@{tset}", f"y@{tset}", f"pleasant@{tset}", f"unpleasant@{tset}"), context,
                           balance="none", source="adhoc")
            prep = prepared({"x": pick(*sets[f"pool@{tset}"], x), "y": pick(*sets[f"pool@{tset}"], y), **attrs[tset]})
            for alternative in ALTERNATIVES:
                opts = Options(alternative=alternative, **given).resolved(test)
                t = time.perf_counter()
                out = compute(prep, opts, name, enc.fingerprint, spec)
                seconds[proc] += time.perf_counter() - t
                hits[(proc, alternative)] += out["p_value"] <= ALPHA
                done[(proc, alternative)] += 1
                if proc == "words" and alternative == "greater" and i < check:
                    checked.append((i, x, y, out["effect_size"], out["p_value"], out["p_method"]))
            if proc == "words":
                for alternative in ALTERNATIVES:
                    t = time.perf_counter()
                    p = crossed_p(prep, alternative)
                    seconds["crossed"] += time.perf_counter() - t
                    if p is not None:
                        hits[("crossed", alternative)] += p <= ALPHA
                        done[("crossed", alternative)] += 1
    for i, x, y, d, p, method in checked:  # the same draw through the library's front door, no option
        lists = lists_dir / f"draw{i}.toml"
        lists.write_text(toml_list(f"draw{i}x", x) + toml_list(f"draw{i}y", y))
        store.generate([f"draw{i}x", f"draw{i}y"], ["bench5"], wordlist_dir=lists_dir, template_dir=template_dir)
        report = store.test(x=f"draw{i}x@bench5", y=f"draw{i}y@bench5", a="pleasant@bench5", b="unpleasant@bench5",
                            name=f"bench-draw-{i}", encoders=[spec])
        (r,) = report.results
        assert abs(r.effect_size - d) < 1e-12 and (r.p_value, r.p_method, r.units) == (p, method, "words"), \
            (i, r.effect_size, d, r.p_value, p)
    return {"hits": hits, "done": done, "seconds": seconds, "words": len(words), "checked": len(checked)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--pool", type=int, default=1500, help="words of the band encoded once; each draw takes 16")
    parser.add_argument("-e", "--encoder", action="append", help="encoder specs (default: glove-6b-50d, minilm)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--check", type=int, default=3, help="draws run again through Store.test, asserted equal")
    args = parser.parse_args()

    import stimkit
    from stimkit.stimuli import wordlists

    builtin = wordlists.load_all()
    exclude = {w.text for n in ("pleasant", "unpleasant") for w in builtin[n].words}
    pool = band_words(args.pool, args.seed, exclude)
    with tempfile.TemporaryDirectory() as tmp:
        lists_dir, template_dir = write_inputs(Path(tmp), {"pool": pool})
        started = time.perf_counter()
        with stimkit.open(Path(tmp) / "bench.duckdb", wordlist_dir=lists_dir, template_dir=template_dir) as store:
            store.generate(["pool", "pleasant", "unpleasant"], ["word", "bench5"], wordlist_dir=lists_dir,
                           template_dir=template_dir)
            print(f"pool: {len(pool)} words of wordfreq ranks 1,000-10,000; {len(TEMPLATES)} templates; "
                  f"{args.draws} draws of 8 + 8 words per encoder; alpha {ALPHA}", flush=True)
            try:
                import stimkit.stats.crossed  # noqa: F401
            except ImportError:
                print("crossed: skipped (stimkit.stats.crossed does not import here)", flush=True)
            for spec in args.encoder or ["glove-6b-50d", "minilm"]:
                t = time.perf_counter()
                found = run_encoder(store, spec, pool, args.draws, args.seed, args.check, lists_dir, template_dir)
                print(f"\n{spec} ({found['words']} pool words known; {time.perf_counter() - t:.0f}s; "
                      f"{found['checked']} draws equal through Store.test):")
                print(f"  {'procedure':<34} {'greater':>16} {'two-sided':>16} {'s/draw':>8}")
                labels = {"word": "word test", "sentences": "sentence test, sentences as units",
                          "words": "sentence test, words as units", "crossed": "crossed model (words x templates)"}
                for proc, label in labels.items():
                    n = found["done"][(proc, "greater")]
                    if not n:
                        continue
                    cells = []
                    for alternative in ALTERNATIVES:
                        rate = found["hits"][(proc, alternative)] / found["done"][(proc, alternative)]
                        se = np.sqrt(ALPHA * (1 - ALPHA) / found["done"][(proc, alternative)])
                        cells.append(f"{100 * rate:5.1f}% +- {100 * se:.2f}")
                    per = found["seconds"][proc] / n
                    print(f"  {label:<34} {cells[0]:>16} {cells[1]:>16} {per:8.3f}", flush=True)
        print(f"\n{time.perf_counter() - started:.0f}s in all")


if __name__ == "__main__":
    main()
