"""Commands over stimuli: generate, sets, catalog, export, import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..choices import BALANCE_POLICIES, UNITS, check_choice, choices
from ..errors import UsageError
from .common import app, catalog_dir, count, db_path, emit, emit_tables, err, format_option, handles_errors, open_store, out, state

catalog_app = typer.Typer(help="The test catalog: list tests, show their set queries.", invoke_without_command=True)
export_app = typer.Typer(help="Export stimulus sets in other tools' formats.")
import_app = typer.Typer(help="Import stimulus sets from other tools' formats.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")


def catalog_con():
    """The store read-only for its imported tests, or None where there is no store yet:
    the catalog itself needs none."""
    from .common import db_path

    return open_store(read_only=True).con if db_path().exists() else None


@app.command("generate")
@handles_errors
def generate_cmd(
    wordlist: Annotated[Optional[list[str]], typer.Option("--wordlist", "-w", help="Word list name (repeatable); default: all (with --wordlist-dir: its lists).")] = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--templates", "-t", help="Template set, optionally /file (repeatable).")] = None,
    wordlist_dir: Annotated[Optional[Path], typer.Option("--wordlist-dir", help="Folder of your own word-list TOML files, added to the built-in lists.")] = None,
    template_dir: Annotated[Optional[Path], typer.Option("--template-dir", help="Folder of your own template sets, searched before the built-in ones.")] = None,
    override: Annotated[bool, typer.Option("--override", help="Let your word lists / template sets replace built-in ones of the same name (recorded in the set's provenance).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line, not a line per new or restored set.")] = False,
    max_sentence_chars: Annotated[Optional[int], typer.Option("--max-sentence-chars", help="Longest sentence a template may render (default 2000; env STIMKIT_MAX_SENTENCE_CHARS).")] = None,
    max_per_template: Annotated[Optional[int], typer.Option("--max-per-template", help="Most sentences one template file may yield in a set (default 100000; env STIMKIT_MAX_PER_TEMPLATE).")] = None,
    max_per_set: Annotated[Optional[int], typer.Option("--max-per-set", help="Most sentences in one set (default 1000000; env STIMKIT_MAX_PER_SET).")] = None,
    max_render_seconds: Annotated[Optional[float], typer.Option("--max-render-seconds", help="Longest time to render one sentence (default 5; env STIMKIT_MAX_RENDER_SECONDS).")] = None,
    max_combinations: Annotated[Optional[int], typer.Option("--max-combinations", help="Most combinations of slot words in a multi-slot set, before its constraints (default 10000000; env STIMKIT_MAX_COMBINATIONS).")] = None,
):
    """Render word lists through template sets into versioned stimulus sets (a no-op when nothing changed).

    In a study's folder, with no list or template set named, the sets the study's tests read,
    each as today's files give it.

    Examples:
      stimkit generate
      stimkit generate -w flowers -t may2019 -t heilman/engineer_attribute
      stimkit generate --wordlist-dir mylists/ -t word
    """
    import dataclasses

    from ..errors import UsageError
    from ..stimuli.limits import Limits

    asked = {"sentence_chars": max_sentence_chars, "per_template": max_per_template, "per_set": max_per_set,
             "render_seconds": max_render_seconds, "combinations": max_combinations}
    for key, value in asked.items():
        if value is not None and not value > 0:
            raise UsageError(f"{Limits.OPTIONS[key][0]} must be > 0, not {value}")
    limits = dataclasses.replace(Limits.from_env(), **{k: v for k, v in asked.items() if v is not None})
    from .common import current_study

    study = current_study() if not (wordlist or template_set or wordlist_dir or template_dir) else None
    with open_store() as store:  # in a study folder, plain `generate` makes the study's sets, no others
        report = store.generate_study(study, limits=limits) if study is not None else \
            store.generate(wordlist, template_set, wordlist_dir, template_dir, override, limits=limits)
    counts = {s: sum(r["status"] == s for r in report) for s in ("new", "restored", "unchanged")}
    if not quiet:
        for r in report:
            if r["status"] != "unchanged":
                out.print(f"{r['status']:>9}  {r['name']:<55} {r['version']}  {count(r['n_stimuli'], 'stimulus'):>14}",
                          highlight=False, markup=False, emoji=False)
    out.print(f"{count(len(report), 'set')}: {counts['new']} new, {counts['restored']} restored, {counts['unchanged']} unchanged "
              f"({count(sum(r['n_stimuli'] for r in report), 'stimulus')}) in {db_path()}",
              highlight=False, markup=False, emoji=False)


@app.command("templates")
@handles_errors
def templates_cmd(
    template_dir: Annotated[Optional[Path], typer.Option("--template-dir", help="Folder of your own template sets, listed before the built-in ones.")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """List the template sets, yours and the built-in ones, each with what it is or what it changes: for choosing the sets to compare in `audit templates -s` and `audit compare -s`.

    A set's line lives with it, as `description = "..."` in its folder's `_set.toml` (templates/README.md).

    Examples:
      stimkit templates
      stimkit templates --template-dir examples/care-tech/templates --format csv
    """
    import polars as pl

    from ..stimuli.template_sets import listing

    emit(pl.DataFrame(listing(template_dir)), fmt, keep=("description",), drop_first=("files", "inherits"))


@app.command("sets")
@handles_errors
def sets_cmd(
    all_versions: Annotated[bool, typer.Option("--all", help="Every version, not only the current ones.")] = False,
    like: Annotated[Optional[list[str]], typer.Argument(help="Only sets whose name contains one of these.")] = None,
    diagnose: Annotated[bool, typer.Option("--diagnose", help="What the sets' words are made of: Zipf frequency (mean, SD), OOV share per static encoder, subword counts per tokenizer, split-half reliability where a result exists.")] = False,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="With --diagnose: encoders whose vocabulary or tokenizer to use (default: those with vectors in the store).")] = None,
    language: Annotated[Optional[str], typer.Option("--language", help="With --diagnose: the words' language (wordfreq's code; default: each set's own).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """List stimulus sets with their versions and counts, or (--diagnose) what their words are made of.

    --diagnose prints a row per current set: its words' Zipf frequency (wordfreq; 7 is "the",
    3 a word like "branding", 0 unknown), each static encoder's share of words out of its
    vocabulary and each tokenizer's mean subword count; then, for the target sets of the
    latest results, the split-half reliability of their words (Spearman-Brown: do the set's
    words lean alike across the test's attribute words?). X and Y more than 0.5 apart in mean
    Zipf or subword count is a confound: `test` and `run` warn of it.

    Examples:
      stimkit sets flowers
      stimkit sets --all --format csv
      stimkit sets names --diagnose -e glove-6b-50d -e minilm
    """
    if not diagnose:
        if encoder or language is not None:
            raise UsageError("--encoder and --language go with --diagnose")
        with open_store(read_only=True) as store:
            emit(_each(like, lambda one: store.sets(one, all_versions)), fmt)
        return
    if all_versions:
        raise UsageError("--diagnose describes the current sets: leave out --all")
    with open_store(read_only=True) as store:
        found = [store.diagnose_sets(one, encoder, language) for one in like or [None]]
    profiles, reliability = (_each(like, lambda one, i=i: found[(like or [None]).index(one)][i]) for i in (0, 1))
    notes = list(dict.fromkeys(n for f in found for n in f[2]))
    for note in notes:
        err.print(note, highlight=False)
    emit_tables({"sets": profiles, "reliability": reliability}, fmt, options={"sets": {"keep": ("set", "zipf_mean")}},
                titles={"reliability": "split-half reliability (Spearman-Brown) of target sets in the latest results"})


def _each(names, frame_of):
    """One frame over several name fragments (`sets a b`): each one's rows, a set once."""
    import polars as pl

    frames = [frame_of(one) for one in (names or [None])]
    whole = pl.concat([f for f in frames if f.height], how="diagonal_relaxed") if any(f.height for f in frames) \
        else frames[0]
    return whole.unique(maintain_order=True) if whole.height else whole


@catalog_app.callback()
@handles_errors
def catalog_list(
    ctx: typer.Context,
    paper: Annotated[Optional[str], typer.Option("--paper", help="Only one paper's tests: may-2019 | tan-celis-2019.")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """List the catalog's tests (and the imported ones, where a store exists).

    Examples:
      stimkit catalog --paper tan-celis-2019
      stimkit catalog show sent-weat9
    """
    if ctx.invoked_subcommand:
        return
    from ..catalog import definitions as catalog

    df = catalog.table(catalog_con(), paper, catalog_dir())
    # the four sets are what a test compares: a narrow terminal folds them, never drops them
    emit(df, fmt, ["test", "context", "paper_test", "X", "Y", "A", "B"] if fmt in (None, "table") else None,
         keep=("X", "Y", "A", "B"))


@catalog_app.command("show")
@handles_errors
def catalog_show(name: str):
    """Print a test's four set queries and the sizes they select.

    Example: stimkit catalog show sent-weat9
    """
    from ..catalog import definitions as catalog

    con = catalog_con()
    test = catalog.get(con, name, catalog_dir())
    out.print(f"{test.name}  context={test.context} paper_test={test.paper_test} balance={test.balance} source={test.source}",
              highlight=False)
    for r in catalog.sizes(con, test).iter_rows(named=True):
        n = r["n_stimuli"] if r["error"] is None else ("no store yet:" if con is None else f"error: {r['error']}")
        out.print(f"\n{r['role']} ({count(n, 'stimulus') if isinstance(n, int) else n})\n  {r['sql']}", highlight=False)


@export_app.command("sentbias")
@handles_errors
def export_sentbias(
    outdir: Path,
    tests: Annotated[Optional[list[str]], typer.Option("--test", help="Test name (repeatable); default: all.")] = None,
    balance: Annotated[Optional[str], typer.Option("--balance", help=f"Apply a balancing policy: {choices(BALANCE_POLICIES)} (default: none, the sets as they are).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the balancing cut (with --balance cut).")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Write into a folder that is not empty (files of the same name are replaced).")] = False,
):
    """Write one JSON file per catalog test in the published SEAT format (unbalanced by default).

    Example: stimkit export sentbias out/ --test sent-weat6
    """
    if balance is not None:
        check_choice(balance, BALANCE_POLICIES, "--balance", "balance policy")
    with open_store(read_only=True) as store:
        written = store.export_sentbias(outdir, tests, balance, seed, force)
    err.print(f"wrote {len(written)} files to {outdir}", highlight=False, markup=False, emoji=False)


@import_app.command("sentbias")
@handles_errors
def import_sentbias(
    directory: Path,
    prefix: Annotated[str, typer.Option("--prefix", help="Prefix of the imported test names.")] = "import:",
    override: Annotated[bool, typer.Option("--override", help="Let an imported test replace the catalog test of the same name (recorded in its sets' provenance).")] = False,
    units: Annotated[Optional[str], typer.Option("--units", help=f"{choices(UNITS)}: the imported tests' units (default words; the format names no word per sentence, so each example is its own word unless you ask for sentences by name).")] = None,
):
    """Load published-format JSON files as stimulus sets and tests named <prefix><file stem>.

    Example: stimkit import sentbias their-tests/ --prefix theirs:
    """
    if units is not None:
        check_choice(units, UNITS, "--units", "units")
    with open_store() as store:
        report = store.import_sentbias(directory, prefix, override, units)
    for r in report:
        out.print(f"{r['test']:<50} sizes X/Y/A/B = {'/'.join(map(str, r['sizes']))}", highlight=False, markup=False, emoji=False)
    out.print(f"imported {count(len(report), 'test')}", highlight=False)




@import_app.command("weathub")
@handles_errors
def import_weathub(
    directory: Path,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Only folders matching this pattern (repeatable): 'de_*', '*_human', en.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line, not a line per test.")] = False,
):
    """Import WEATHub (Mukherjee et al. 2023) as published: word tests weathub:<folder>:<file stem>.

    DIR is WEATHub's data/ folder (or the folder holding it), with one folder per language and
    variant: <lang>_human (translated by people), <lang>_gt (machine translated), <lang>_all
    (both pooled), <lang>_new, <lang>_india, and en. Each set records its language and
    translation from the folder's name; a word repeated within a list is kept once.

    Examples:
      stimkit import weathub weathub/data
      stimkit import weathub weathub/data --only 'de_*' --only en
    """
    with open_store() as store:
        report = store.import_weathub(directory, only)
    if not quiet:
        for r in report:
            repeats = f"  {count(len(r['repeats']), 'repeat')} left out" if r["repeats"] else ""
            out.print(f"{r['test']:<26} {r['language']:<3} {r['translation']:<7} X/Y/A/B "
                      f"{'/'.join(map(str, r['sizes']))}{repeats}", highlight=False, markup=False, emoji=False)
    languages = sorted({r["language"] for r in report})
    left = sum(len(r["repeats"]) for r in report)
    err.print(f"imported {count(len(report), 'test')} in {count(len(languages), 'language')}"
              + (f"; {count(left, 'repeated word')} left out (kept once)" if left else ""), highlight=False)
@import_app.command("corpus")
@handles_errors
def import_corpus_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Corpus files or folders: text (.txt, .cor, any name but these: a line a record), .jsonl/.ndjson (a `text` field), .parquet (a `text` column); .gz: read compressed; a folder: its files of these names, recursively.")],
    wordlist: Annotated[list[str], typer.Option("--wordlist", "-w", help="A word list whose words to find (repeatable).")],
    name: Annotated[str, typer.Option("--name", help="The corpus' name: sets <list>@corpus:<name>.")] = "corpus",
    per_word: Annotated[int, typer.Option("--per-word", "-n", help="Contexts kept a word, at most (a seeded sample): 1 to 10,000.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample: a 64-bit integer.")] = 0,
    min_contexts: Annotated[Optional[int], typer.Option("--min-contexts", help="Name the words with fewer contexts than this, 0 to 10,000 (default: the lesser of 10 and --per-word).")] = None,
    case: Annotated[str, typer.Option("--case", help="auto (names in their own case, other words in any), sensitive, insensitive.")] = "auto",
    max_line_chars: Annotated[Optional[int], typer.Option("--max-line-chars", help="Refuse a record (a line, a JSONL `text`, a Parquet cell) longer than this: 1 to 100,000,000 (default 1,000,000).")] = None,
    max_sentence_chars: Annotated[Optional[int], typer.Option("--max-sentence-chars", help="Longest sentence kept as a stimulus; a longer one is left out and counted (default 2000; env STIMKIT_MAX_SENTENCE_CHARS).")] = None,
    wordlist_dir: Annotated[Optional[Path], typer.Option("--wordlist-dir", help="Your word lists, beside the built-in ones.")] = None,
    document: Annotated[Optional[str], typer.Option("--document", help="What a document (the crossed model's context level) is: file, record (a line or row), or a field of the JSONL records or Parquet columns. Default: for JSONL and Parquet the record (named by its `document` or `id` field where it has one); for text the file.")] = None,
    encoding: Annotated[str, typer.Option("--encoding", help="The text's encoding (text and JSONL; e.g. latin-1, cp1252, utf-16). A file not in it is refused, naming the line.")] = "utf-8",
):
    """Contexts from real text: sentences holding the words of word lists, sampled, as stimulus sets.

    Each list becomes the set <list>@corpus:<name>: a sentence a stimulus, with the word's span
    (c-word and pooled encoders both read it), its document (--document; a file is named by its
    path relative to the folder the files share) as its context (the crossed model's template
    factor) and its provenance (document, line, offset) in `corpus_contexts`. Control,
    bidi-override and private-use characters are taken out of the text, and counted. A test
    over corpus sets runs as c-word (each word's own vector) unless --context sentence.

    Examples:
      stimkit import corpus speeches/*.txt -w male_terms -w female_terms -w career -w family --name speeches -n 50
      stimkit import corpus lee_background.cor --document record -w male_terms -w female_terms --name lee
    """
    import dataclasses

    from ..stimuli.limits import Limits

    if max_sentence_chars is not None and not max_sentence_chars > 0:
        raise UsageError(f"--max-sentence-chars must be > 0, not {max_sentence_chars}")
    limits = Limits.from_env()
    if max_sentence_chars is not None:
        limits = dataclasses.replace(limits, sentence_chars=max_sentence_chars)
    with open_store(wordlist_dir=wordlist_dir) as store:
        r = store.import_corpus(paths, wordlist, name=name, per_word=per_word, seed=seed, min_contexts=min_contexts,
                                case=case, max_line_chars=max_line_chars, limits=limits, document=document,
                                encoding=encoding)
    err.print(f"read {count(r.n_records, 'record')}, {count(r.n_sentences, 'sentence')}; contexts from "
              f"{count(len(r.documents), 'document')}", highlight=False, markup=False, emoji=False)
    if len(r.documents) == 1:
        err.print(f"note: every context comes from one document ({r.documents[0]}): a test over these sets has no "
                  "crossed d (one level); --document record makes each line or row a document", highlight=False,
                  markup=False, emoji=False)
    if r.removed:
        err.print(f"note: took {count(r.removed, 'control, bidi or private-use character')} out of "
                  f"{count(r.cleaned, 'record')}", highlight=False, markup=False, emoji=False)
    if r.too_long:
        err.print(f"note: left out {count(r.too_long, 'sentence')} holding a word, over {r.sentence_chars:,} characters "
                  "(raise it with --max-sentence-chars)", highlight=False, markup=False, emoji=False)
    for s in r.sets:
        out.print(f"{s['status']:>9}  {s['name']:<40} {s['version']}  {count(s['n_words'], 'word'):>9}  "
                  f"{count(s['n_stimuli'], 'context'):>13}", highlight=False, markup=False, emoji=False)
    if r.few:
        shown = ", ".join(f"{c.word} ({c.sampled})" for c in r.few[:FEW_SHOWN])
        more = f", and {len(r.few) - FEW_SHOWN:,} more" if len(r.few) > FEW_SHOWN else ""
        err.print(f"note: {count(len(r.few), 'word')} with fewer than {min_contexts if min_contexts is not None else min(10, per_word)} "
                  f"contexts: {shown}{more}", highlight=False, markup=False, emoji=False)


FEW_SHOWN = 50   # words named in the note of too few contexts: a long list would fill the terminal


@import_app.command("holisticbias")
@handles_errors
def import_holisticbias(
    directory: Path,
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for the word lists, template set and SOURCE.md (created; must be empty or hold an earlier import unless --force).")],
    force: Annotated[bool, typer.Option("--force", help="Write into a folder that holds other files (files of the same name are replaced).")] = False,
    no_generate: Annotated[bool, typer.Option("--no-generate", help="Only write the files; generate later.")] = False,
    max_per_set: Annotated[Optional[int], typer.Option("--max-per-set", help="Most sentences in one set (default 1000000).")] = None,
):
    """Convert HolisticBias (its four JSON files) into word lists and the multi-slot template set
    `holisticbias`, and generate its whole product, the set descriptor=*@holisticbias.

    Example:
      stimkit import holisticbias ResponsibleNLP/holistic_bias/dataset/v1.1 -o hb/
      stimkit generate --wordlist-dir hb/wordlists --template-dir hb/templates -w descriptor=hb_age_young -t holisticbias
    """
    import dataclasses

    from ..stimuli.limits import Limits

    if max_per_set is not None and not max_per_set > 0:
        raise UsageError(f"--max-per-set must be > 0, not {max_per_set}")
    limits = dataclasses.replace(Limits.from_env(), **({"per_set": max_per_set} if max_per_set else {}))
    if no_generate:  # no store opened: only the files
        from ..catalog import holisticbias

        report = {**holisticbias.import_files(directory, out_dir, force), "sets": []}
    else:
        with open_store(limits=limits) as store:
            report = store.import_holisticbias(directory, out_dir, force)
    for note in report["notes"]:
        err.print(f"note: {note}", highlight=False, markup=False, emoji=False)
    counts = ", ".join(f"{n} {what}" for what, n in report["counts"].items())
    err.print(f"read {counts}; wrote {count(len(report['files']), 'file')} to {out_dir}", highlight=False,
              markup=False, emoji=False)
    for r in report["sets"]:
        out.print(f"{r['status']:>9}  {r['name']:<40} {r['version']}  {count(r['n_stimuli'], 'stimulus'):>16}",
                  highlight=False, markup=False, emoji=False)




@import_app.command("crows-pairs")
@handles_errors
def import_crows_cmd(
    file: Annotated[Path, typer.Argument(help="The CrowS-Pairs CSV (crows_pairs_anonymized.csv).")],
    name: Annotated[Optional[str], typer.Option("--name", help="The test's name (default crows-pairs).")] = None,
    any_bias_type: Annotated[bool, typer.Option("--any-bias-type", help="Accept bias types other than the published nine.")] = False,
):
    """Import CrowS-Pairs (Nangia et al. 2020): its pairs with every field, its sentences as the sets
    <name>/more and <name>/less, and the test <name> (default crows-pairs).

    The whole file is checked before anything is stored: an empty file, a missing column, a
    pair whose sentences do not differ, a direction other than stereo/antistereo or an
    unknown bias type is refused with its line. The authors warn that the data are noisy
    (Blodgett et al. 2021) and hold offensive statements.

    Examples:
      stimkit import crows-pairs crows_pairs_anonymized.csv
      stimkit test crows-pairs -e smollm2-135m
    """
    from .crows import import_file

    import_file(file, name, any_bias_type)
