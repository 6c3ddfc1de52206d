"""CrowS-Pairs on the command line: the bodies of `import crows-pairs FILE` (stimuli.py) and
`results crows` (association.py), and the route of `stimkit test crows-pairs -e <scoring
encoder>` to the likelihood test (parse, call, print)."""

from __future__ import annotations

from pathlib import Path

from .common import count, err, invocation, open_store, out


def import_file(file: Path, name: str | None, any_bias_type: bool) -> None:
    """`import crows-pairs`: import, then the counts and the authors' warning (stderr) and the
    pairs by bias type (stdout)."""
    from ..catalog.crows import WARNING

    with open_store() as store:
        r = store.import_crows(file, name, any_bias_type)
    err.print(f"read {count(r['n_pairs'], 'pair')} ({r['stereo']} stereo, {r['antistereo']} antistereo) in "
              f"{count(len(r['bias_types']), 'bias type')}; test {r['test']} (import {r['version']}), sets "
              f"{', '.join(r['sets'])}", highlight=False, markup=False, emoji=False)
    err.print(f"note: {WARNING}", highlight=False, markup=False, emoji=False)
    for bias, n in r["bias_types"].items():
        out.print(f"{bias:<22} {n:>5}", highlight=False, markup=False, emoji=False)


def show_results(run: str | None, test: str | None, splits: str, fmt: str | None, columns: str | None) -> None:
    """`results crows`: the stored rows, read-only."""
    from ..views import crows as view
    from ..views.emit import default_format

    with open_store(read_only=True) as store:
        df = store.crows_results(run, test)
    view.show(df, fmt or default_format(), columns, splits)


def crows_names(patterns) -> list[str]:
    """The tests named that are imported CrowS tests (none: the store has none, or no names)."""
    from ..cli.common import db_path

    if not patterns or not db_path().exists():
        return []
    with open_store(read_only=True) as store:
        known = store.crows_tests()
    return [p for p in patterns if p in known]


def run_test(patterns: list[str], resolved, fmt: str | None, verbose: bool) -> None:
    """`stimkit test crows-pairs -e ENC`: the likelihood test of each CrowS test named (all of the
    names must be CrowS tests), its rows printed as `results crows --run` prints them."""
    from ..errors import UsageError
    from ..views import crows as view
    from ..views.emit import default_format

    known = crows_names(patterns)
    if len(known) != len(patterns):
        other = [p for p in patterns if p not in known]
        raise UsageError(f"run CrowS tests ({', '.join(known)}) apart from association tests ({', '.join(other)})")
    with open_store() as store:
        run_id, _ = store.crows(known, procedure=resolved, command=invocation(), progress=_progress(verbose))
        df = store.crows_results(run_id)
    err.print(f"run {run_id}: {count(df.height, 'row')}; see `stimkit results crows --run {run_id}`",
              highlight=False, markup=False, emoji=False)
    view.show(df, fmt or default_format(), None, "all")


def _progress(verbose: bool):
    """A bar on a terminal while the sentences are scored (stderr), one callback for every encoder."""
    from .encode import progress_for

    class _Named:  # progress_for names the bar after an encoder's spec
        spec = "crows-pairs"

    return progress_for(_Named()) if verbose else None
