"""A test over a family of replicates: one model trained again under other seeds or on
bootstrap samples of its corpus (`trained:NAME`, from `stimkit train`), or any list of encoders
that stand for such draws (a study's [replicates] table, `--replicate NAME=SPEC`: a folder of
MultiBERTs checkpoints, a vectors file per seed: `replicates:NAME`).

Each replicate is an ordinary encoder and its result an ordinary result. The family adds, per
test, a summary row (db/034 replicate_summaries) under the family's encoder: the median d, the
replicates' 2.5-97.5% interval, the share of replicates whose own test rejects at the run's
alpha, the same spread over seeds only and over bootstrap samples only, and the variance of
s(w) split into words, templates (sentence tests) and replicates (stats.replicates).

Replicates of different vocabularies (a bootstrap sample that never saw a rare word) are
compared on the stimuli every replicate reads whole: each test's stimuli are cut, before
anything is encoded, to those whose every token is in every replicate's vocabulary, the cut is
said in one line and recorded (missing_words, n_shared_words), and it enters the results' input
keys (PlannedTest.restricted) so a replicate's result in a family never stands in for its
result alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from .. import store
from ..errors import InputError, StimkitError, UsageError, first_line
from ..seeding import derive_seed
from ..stats.decision import significant
from .plan import Plan, refuse_early
from .rows import Failure

TRAINED, NAMED = "trained:", "replicates:"
MEMBER = re.compile(r"(seed|boot)[-_](\d+)(?:\.\w+)?$")  # seed-3, boot-12, multiberts-seed_4, seed-0.txt
LOW, HIGH = 2.5, 97.5          # the replicates' interval, percent


@dataclass(frozen=True)
class Member:
    spec: str                  # the replicate's encoder spec, as resolved
    kind: str                  # seed | boot
    k: int | None = None


@dataclass(frozen=True)
class Family:
    encoder: str               # trained:NAME | replicates:NAME: the summary's encoder
    members: tuple[Member, ...]
    shared: frozenset[str] | None = None   # the words every member's vocabulary holds (None: no vocabularies)
    vocab_sizes: tuple[int, ...] = ()
    missing: dict = field(default_factory=dict)   # test -> the words of its stimuli some member lacks
    fingerprints: dict = field(default_factory=dict)  # member spec -> its encoder's fingerprint (as planned)

    @property
    def specs(self) -> list[str]:
        return [m.spec for m in self.members]


def member_of(spec: str, index: int) -> Member:
    """A replicate's kind and number from its name (`.../seed-3`, `.../boot-12`); any other
    encoder of a named family is a seed: a model trained again on the same data (MultiBERTs)."""
    m = MEMBER.search(spec.split(",")[0])
    return Member(spec, m.group(1), int(m.group(2))) if m else Member(spec, "seed", index)


def is_family(spec: str) -> bool:
    from ..encoders import split_display

    inner = split_display(spec)[1]
    return inner.startswith(NAMED) or (inner.startswith(TRAINED) and "/" not in inner.split(",")[0])


def parse_named(values: list[str]) -> dict[str, list[str]]:
    """`--replicate NAME=SPEC` (repeated) -> {NAME: [SPEC, ...]} in the order given."""
    found: dict[str, list[str]] = {}
    for value in values:
        name, sep, spec = value.partition("=")
        if not sep or not name.strip() or not spec.strip() or not re.fullmatch(r"[\w.-]+", name.strip()):
            raise UsageError(f"--replicate {value!r}: give NAME=SPEC (a family's name, then one replicate's encoder)")
        found.setdefault(name.strip(), []).append(spec.strip())
    return found


def expand(con, specs: list[str], named: dict[str, list[str]] | None = None) -> tuple[list[str], list[Family]]:
    """The encoder specs with every family spec replaced by its replicates, and the families.
    A family of one replicate is refused (one line): a spread needs two draws at least."""
    from ..encoders import split_display

    named = named or {}
    out, families = [], []
    for spec in specs:
        if not is_family(spec):
            out.append(spec)
            continue
        inner = split_display(spec)[1].strip()
        if inner.startswith(TRAINED):
            from ..encoders.trained import family as trained_family

            head, comma, options = inner.partition(",")   # trained:NAME,pooling=token: each replicate's
            members = [m + comma + options for m in trained_family(con, head[len(TRAINED):])]
        else:
            name = inner[len(NAMED):]
            if name not in named:
                known = ", ".join(sorted(named)) or "none"
                raise UsageError(f"encoder {spec!r}: no family {name!r} is named (--replicate {name}=SPEC, or a study's "
                                 f"[replicates] table; named: {known})")
            members = list(dict.fromkeys(named[name]))
        refuse_unmatched(spec, members)
        if len(members) < 2:
            raise InputError(f"encoder {spec!r}: a family of {len(members)} replicate{'s' if len(members) != 1 else ''}: "
                             "the spread of d over replicates needs at least 2 (train more seeds or bootstrap samples)")
        families.append(Family(inner, tuple(member_of(m, i) for i, m in enumerate(members))))
        out += members
    return list(dict.fromkeys(out)), families


# Options whose result is not one per (test, replicate) as the summary reads it: a token-pooled
# member (c-word) stores its results under another context, `layer=all` one result per layer.
UNMATCHED = (("pooling", "token"), ("layer", "all"))


def refuse_unmatched(spec: str, members: list[str]) -> None:
    """A family whose member carries pooling=token or layer=all is refused in one line: its
    results would not be matched to the family's summary (one result per test and replicate)."""
    for m in members:
        options = {k.strip(): v.strip() for k, _, v in (o.partition("=") for o in m.split(",")[1:])}
        for key, value in UNMATCHED:
            if options.get(key) == value:
                raise UsageError(f"encoder {spec!r}: replicate {m!r} has {key}={value}, which a replicate family does "
                                 "not summarise (one result per test and replicate); run it as its own encoder")


def fingerprint_of(con, spec: str) -> str:
    """An encoder's fingerprint, a trained replicate's read from the store without loading its
    vectors (encoders.trained: a CBoW replicate's fingerprint is its model's)."""
    from ..encoders import resolve, split_display
    from ..encoders.trained import PREFIX

    inner = split_display(spec)[1].strip()
    if inner.startswith(PREFIX) and "," not in inner:
        name, _, replicate = inner[len(PREFIX):].rpartition("/")
        row = store.one(con, "SELECT fingerprint FROM trained_models WHERE name = ? AND replicate = ?", [name, replicate])
        if row is not None:
            return row[0]
    return resolve(spec, con).fingerprint


# ------------------------------------------------------------------ shared vocabulary

def vocabulary(enc):
    """A static encoder's vocabulary (encoders.wordvectors.WordVectors: .words, .index, .lower),
    None for an encoder that reads any text (a transformer's tokenizer)."""
    return getattr(enc, "vectors", None) if getattr(enc, "static", False) else None


def _text_tokens(text: str, lower: bool) -> list[str]:
    from ..encoders.wordvectors import tokenize

    return [t for t, _, _ in tokenize(text, lower)]


def restrict(plan: Plan, families: list[Family]) -> tuple[Plan, list[Family]]:
    """Each family's pairs on the stimuli every member reads whole (module docstring). Members
    without a vocabulary (transformers) read any text: their family is left as it is. A test
    left with too few stimuli by the cut fails for that family's members (one line each)."""
    from ..encoders import split_display

    by_spec = {getattr(enc, "requested", enc.spec): enc for enc in plan.encoders}   # as typed, less a display name
    pairs, refused, notes, done = list(plan.pairs), list(plan.refused), list(plan.notes), []
    for fam in families:
        encs = [by_spec.get(split_display(m.spec)[1].strip()) for m in fam.members]
        fam = replace(fam, fingerprints={m.spec: e.fingerprint for m, e in zip(fam.members, encs) if e is not None})
        vocabs = [vocabulary(e) for e in encs if e is not None]
        if not vocabs or len(vocabs) < len(encs) or any(v is None for v in vocabs):
            done.append(fam)
            continue
        shared = frozenset.intersection(*(frozenset(v.index) for v in vocabs))
        sizes = tuple(len(v.words) for v in vocabs)
        lower = all(v.lower for v in vocabs)
        mine = {e.fingerprint for e in encs if e is not None}
        missing: dict[str, list[str]] = {}
        cut: dict[str, object] = {}
        for i, (p, enc) in enumerate(pairs):
            if enc.fingerprint not in mine:
                continue
            if p.name not in cut:
                cut[p.name], missing[p.name] = _restricted(p, shared, lower)
            q = cut[p.name]
            if isinstance(q, StimkitError):
                continue
            pairs[i] = (q, enc)
        for name, q in cut.items():
            if isinstance(q, StimkitError):
                # one line for the family, not one per replicate: the cut is the family's
                refused.append(Failure(name, fam.encoder, f"on the {len(shared):,} words all its replicates share: "
                                                          f"{first_line(q)}"))
        pairs = [(p, e) for p, e in pairs if not (e.fingerprint in mine and isinstance(cut.get(p.name), StimkitError))]
        notes.append(f"{fam.encoder}: {len(fam.members)} replicates; their vocabularies ({min(sizes):,}-{max(sizes):,} "
                     f"words) share {len(shared):,} words" + "".join(
                         f"; test {t!r} leaves out {len(w)} word{'s' if len(w) != 1 else ''} some replicate lacks: "
                         f"{', '.join(w[:12])}{', ...' if len(w) > 12 else ''}" for t, w in missing.items() if w))
        done.append(replace(fam, shared=shared, vocab_sizes=sizes, missing=missing))
    return replace(plan, pairs=tuple(pairs), refused=tuple(refused), notes=tuple(notes)), done


def _restricted(p, shared: frozenset[str], lower: bool):
    """The planned test on the stimuli whose every token is shared (and the words left out), or
    the StimkitError refuse_early gives on what is left."""
    sets, missing = {}, []
    for role, f in p.sets.items():
        texts = f["stimulus"].to_list()
        keep = [bool(tokens) and all(t in shared for t in tokens) for tokens in (_text_tokens(s, lower) for s in texts)]
        words = f["word"].to_list() if "word" in f.columns else texts
        missing += [w for w, k in zip(words, keep) if not k]
        sets[role] = f.filter(pl.Series(keep, dtype=pl.Boolean))
    missing = list(dict.fromkeys(missing))
    if not missing:
        return p, []
    key = hashlib.sha256(json.dumps(sorted(missing)).encode()).hexdigest()[:16]
    q = replace(p, sets=sets, restricted=key)
    try:
        for role, f in sets.items():
            if f.height == 0:
                raise InputError(f"no stimulus of set {role.upper()} is in every replicate's vocabulary")
        refuse_early(p.test, sets, p.options)
    except StimkitError as e:
        return e, missing
    return q, missing


# ------------------------------------------------------------------ the summary

@dataclass(frozen=True)
class SummaryRow:
    summary_id: str
    run_id: str
    test: str
    encoder: str
    context: str | None
    role_versions: str | None
    input_key: str | None
    alpha: float
    alternative: str | None
    n_replicates: int
    n_seed: int
    n_boot: int
    d_median: float | None
    d_low: float | None
    d_high: float | None
    share_holding: float | None
    share_low: float | None = None
    share_high: float | None = None
    seed_d_median: float | None = None
    seed_d_low: float | None = None
    seed_d_high: float | None = None
    seed_d_sd: float | None = None
    boot_d_median: float | None = None
    boot_d_low: float | None = None
    boot_d_high: float | None = None
    boot_d_sd: float | None = None
    var_words: float | None = None
    var_templates: float | None = None
    var_group_template: float | None = None
    var_replicates: float | None = None
    var_group_replicate: float | None = None
    var_residual: float | None = None
    var_share_words: float | None = None
    var_share_templates: float | None = None
    var_share_group_template: float | None = None
    var_share_replicates: float | None = None
    var_share_group_replicate: float | None = None
    var_share_residual: float | None = None
    var_replicates_low: float | None = None
    var_replicates_high: float | None = None
    var_group_replicate_low: float | None = None
    var_group_replicate_high: float | None = None
    var_method: str | None = None
    n_shared_words: int | None = None
    vocab_min: int | None = None
    vocab_max: int | None = None
    missing_words: list[str] | None = None


def _f(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def spread_of(d: np.ndarray) -> tuple[float | None, float | None, float | None, float | None]:
    """Median, 2.5% and 97.5% quantiles (stats.replicates.spread) and the sample SD of the
    replicates' d; None where fewer than 2 replicates have one."""
    from ..stats.replicates import spread

    if len(d) < 2:
        return None, None, None, None
    s = spread(d)
    return _f(s.median), _f(s.q025), _f(s.q975), _f(float(np.std(d, ddof=1)))


def summarise(con, run_id: str, families: list[Family], result_ids: list[str], alpha: float,
              seed: int) -> tuple[list[SummaryRow], list[dict]]:
    """A SummaryRow per (family, test) from the stored WEAT results `result_ids` of the run, and
    the rows naming its members."""
    if not families or not result_ids:
        return [], []
    rows = store.rows(con, """SELECT result_id, test, fingerprint, effect_size, p_value, context, role_versions,
                                     input_key, alternative FROM results
                              WHERE result_id IN (SELECT unnest(?)) AND coalesce(metric, 'weat') = 'weat'
                              ORDER BY result_id""", [list(result_ids)])
    out, members = [], []
    for fam in families:
        by_fp = {fam.fingerprints[m.spec]: m for m in fam.members if m.spec in fam.fingerprints}
        tests: dict[str, list] = {}
        for r in rows:
            if r[2] in by_fp:
                tests.setdefault(r[1], []).append(r)
        for test, found in tests.items():
            summary_id = f"{run_id}/{test}/{fam.encoder}"
            kinds = [by_fp[r[2]].kind for r in found]
            d = np.array([np.nan if r[3] is None else r[3] for r in found], dtype=np.float64)
            p = [r[4] for r in found]
            ok = np.isfinite(d)
            is_seed, is_boot = ok & (np.array(kinds) == "seed"), ok & (np.array(kinds) == "boot")
            med, low, high, _ = spread_of(d[ok])
            s_med, s_low, s_high, s_sd = spread_of(d[is_seed])
            b_med, b_low, b_high, b_sd = spread_of(d[is_boot])
            key = hashlib.sha256(json.dumps(sorted(str(r[7]) for r in found)).encode()).hexdigest()[:24]
            split = variance_split(con, [r[0] for r in found], derive_seed(seed, "replicates", test, fam.encoder))
            missing = fam.missing.get(test)
            out.append(SummaryRow(
                summary_id=summary_id, run_id=run_id, test=test, encoder=fam.encoder, context=found[0][5],
                role_versions=found[0][6], input_key=key, alpha=alpha, alternative=found[0][8],
                n_replicates=int(ok.sum()), n_seed=int(is_seed.sum()), n_boot=int(is_boot.sum()),
                d_median=med, d_low=low, d_high=high, **share_holding([x for x, o in zip(p, ok) if o], alpha),
                seed_d_median=s_med, seed_d_low=s_low, seed_d_high=s_high, seed_d_sd=s_sd,
                boot_d_median=b_med, boot_d_low=b_low, boot_d_high=b_high, boot_d_sd=b_sd, **split,
                n_shared_words=len(fam.shared) if fam.shared is not None else None,
                vocab_min=min(fam.vocab_sizes) if fam.vocab_sizes else None,
                vocab_max=max(fam.vocab_sizes) if fam.vocab_sizes else None,
                missing_words=list(missing) if missing is not None else None))
            members += [{"summary_id": summary_id, "result_id": r[0], "replicate": by_fp[r[2]].spec,
                         "kind": by_fp[r[2]].kind, "k": by_fp[r[2]].k} for r in found]
    return out, members


def share_holding(p: list, alpha: float) -> dict:
    """The share of replicates whose own test rejects at alpha, with its exact interval
    (stats.replicates.share_holding)."""
    from ..stats.replicates import share_holding as share

    if len(p) < 2:
        return {"share_holding": None}
    s = share(np.array([bool(significant(x, alpha)) for x in p]))
    return {"share_holding": s.share, "share_low": s.ci_low, "share_high": s.ci_high}


def variance_split(con, result_ids: list[str], seed: int) -> dict:
    """s(w) of the members' target stimuli (result_items) split into words, templates and
    replicates (stats.replicates.variance_split); only the reason where it cannot be fitted."""
    from ..stats.replicates import variance_split as split

    items = store.rows(con, """SELECT result_id, role, coalesce(word, stimulus), template_id, association
                               FROM result_items WHERE result_id IN (SELECT unnest(?)) AND role IN ('X', 'Y')
                                 AND association IS NOT NULL ORDER BY result_id, role, ordinal""", [result_ids])
    if not items:
        return {}
    templates = [i[3] for i in items]
    try:
        r = split(np.array([i[4] for i in items]), [i[0] for i in items], np.array([i[1] == "X" for i in items]),
                  [i[2] for i in items], templates if len(set(templates) - {None}) > 1 else None,  # one frame: a word test
                  rng=np.random.default_rng(seed))
    except StimkitError as e:
        return {"var_method": f"not estimated: {first_line(e)}"}
    out = {f"var_{k}": _f(v) for k, v in r.components.items()}
    out.update({f"var_share_{k}": _f(v) for k, v in r.shares.items()})
    for k, (lo, hi) in r.intervals.items():
        out[f"var_{k}_low"], out[f"var_{k}_high"] = _f(lo), _f(hi)
    out["var_method"] = r.scheme
    return out


def write(con, summaries: list[SummaryRow], members: list[dict]) -> None:
    store.insert(con, "replicate_summaries", summaries)
    store.insert(con, "replicate_members", members)


def stored(con, where_run: str | None = None, encoder: str | None = None) -> pl.DataFrame:
    """The stored summaries (newest first), of one run or one family's encoder."""
    sql = "SELECT * FROM replicate_summaries WHERE (? IS NULL OR run_id = ?) AND (? IS NULL OR encoder = ?) " \
          "ORDER BY created_at DESC, summary_id"
    return store.frame(con, sql, [where_run, where_run, encoder, encoder])


def summaries_of(families: list[Family], options):
    """The `then` of execute: the run's summaries written in its transaction and kept on its report."""
    def then(con, run_id: str, report) -> None:
        ids = [r.result_id for r in report.results] + list(report.reused_results)
        rows, members = summarise(con, run_id, families, ids, options.alpha, options.seed)
        write(con, rows, members)
        report.summaries = rows
    return then
