"""`stimkit train`'s report: a row a replicate, and one line on the family (stderr)."""

from __future__ import annotations


def train_frame(report):
    """The replicates of a TrainReport as a table (encoder, replicate, status, fingerprint, ...)."""
    from dataclasses import asdict

    import polars as pl

    columns = ["encoder", "replicate", "status", "fingerprint", "vocab_size", "n_tokens", "seconds"]
    return pl.DataFrame([asdict(r) for r in report.rows] or None, schema=None if report.rows else columns,
                        infer_schema_length=None)


def train_line(report) -> str:
    """What was trained, on what, how fast: one line."""
    new = sum(1 for r in report.rows if r.status == "new")
    stored = len(report.rows) - new
    params = ", ".join(f"{k} {v}" for k, v in report.params.items())
    rate = f", {60 * new / report.seconds:,.1f} models a minute" if new and report.seconds > 0 else ""
    kept = f" ({stored} stored already)" if stored else ""
    return (f"trained:{report.name}: {new} replicate(s) trained{kept} by {report.method} ({params}) on "
            f"{report.n_documents:,} documents, {report.n_tokens:,} tokens (corpus {report.corpus_hash[:12]}); "
            f"{report.seconds:,.1f} s, engine {report.engine}{rate}")
