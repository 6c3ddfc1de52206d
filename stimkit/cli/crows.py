"""CrowS-Pairs on the command line: `import crows-pairs FILE`, `results crows`, and the route of
`stimkit test crows-pairs -e <scoring encoder>` to the likelihood test (parse, call, print).
stimuli.py and association.py register these on their groups (one module per command word)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import count, err, format_option, handles_errors, invocation, open_store, out


def register_import(import_app) -> None:
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
        from ..catalog.crows import WARNING

        with open_store() as store:
            r = store.import_crows(file, name, any_bias_type)
        err.print(f"read {count(r['n_pairs'], 'pair')} ({r['stereo']} stereo, {r['antistereo']} antistereo) in "
                  f"{count(len(r['bias_types']), 'bias type')}; test {r['test']} (import {r['version']}), sets "
                  f"{', '.join(r['sets'])}", highlight=False, markup=False, emoji=False)
        err.print(f"note: {WARNING}", highlight=False, markup=False, emoji=False)
        for bias, n in r["bias_types"].items():
            out.print(f"{bias:<22} {n:>5}", highlight=False, markup=False, emoji=False)


def register_results(results_app) -> None:
    @results_app.command("crows")
    @handles_errors
    def results_crows_cmd(
        run: Annotated[Optional[str], typer.Option("--run", help="One run's rows (a run id, or `latest`); default: the latest run of each test x encoder.")] = None,
        test: Annotated[Optional[str], typer.Option("--test", help="One CrowS test's rows.")] = None,
        splits: Annotated[str, typer.Option("--splits", help="all (every split), main (all pairs and the directions), or one split (e.g. bias:gender).")] = "all",
        fmt: Annotated[Optional[str], format_option()] = None,
        columns: Annotated[Optional[str], typer.Option("--columns", help="Columns to show, comma-separated.")] = None,
    ):
        """Stored CrowS-Pairs results: each scoring variant's metric score with its interval, by direction and bias type.

        Examples:
          stimkit results crows
          stimkit results crows --run latest --splits main -f csv
        """
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
