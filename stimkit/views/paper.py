"""A paper's table: plain cells as a booktabs LaTeX table or a Markdown table with its caption
(the results' chosen columns: views.results; Table 4: views.table4; Tables 7-8: views.tancelis)."""

from __future__ import annotations

from ..errors import UsageError
from .emit import latex_escape, markdown_escape

HEADERS = {"test": "Test", "encoder": "Encoder", "context": "Context", "language": "Language", "d": "d", "ci": "95% CI",
           "p_value": "p", "p_adjusted": "p (adj.)", "rejected": "Rejected", "n": "n (X/Y/A/B, in units)",
           "encoding": "Encoding", "section": "Section", "baseline_percentile": "Baseline percentile",
           "baseline_fpr": "Baseline FPR"}
LATEX_HEADERS = {"d": "$d$", "p_value": "$p$", "p_adjusted": "$p_{\\mathrm{adj}}$", "n": "$n$ (X/Y/A/B, in units)"}


def render_table(columns: list[str], rows: list[list[str]], numeric: list[bool], fmt: str, caption: str,
                 groups: list[int] | None = None, headers: dict[str, str] | None = None) -> str:
    """Plain cells as a booktabs LaTeX table or a Markdown table with a `Table:` caption line.
    groups: row indices before which a LaTeX table draws a \\midrule (sections); headers: a
    column's heading where it is not HEADERS' (an encoder's display name)."""
    given = headers or {}
    headers = {**HEADERS, **given}
    if fmt == "latex":
        head = " & ".join(LATEX_HEADERS[c] if c in LATEX_HEADERS and c not in given else latex_escape(headers.get(c, c))
                          for c in columns)
        body = []
        for i, row in enumerate(rows):
            if groups and i in groups and i:
                body.append(r"\midrule")
            body.append(" & ".join(latex_escape(c) for c in row) + r" \\")
        spec = "".join("r" if n else "l" for n in numeric)
        return "\n".join([r"% needs \usepackage{booktabs}", r"\begin{table}", r"\centering",
                          rf"\caption{{{latex_escape(caption)}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                          head + r" \\", r"\midrule", *body, r"\bottomrule", r"\end{tabular}", r"\end{table}"]) + "\n"
    if fmt == "markdown":
        lines = ["| " + " | ".join(markdown_escape(headers.get(c, c)) for c in columns) + " |",
                 "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"]
        lines += ["| " + " | ".join(markdown_escape(c) for c in row) + " |" for row in rows]
        return "\n".join(lines) + f"\n\nTable: {markdown_escape(caption)}\n"
    raise UsageError(f"a paper table is latex or markdown, not {fmt!r}")
