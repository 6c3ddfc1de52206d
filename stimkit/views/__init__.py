"""The views layer: every table a person or a paper reads is rendered here, from the library's
result objects (a family's corrected results, with the family). The CLI and the report import
it; the run layer, analysis/ and api.py never do (tests/test_architecture.py).

text: a cell's text (d with its marks, p, interval, n, flags) and captions and legends;
results, table4, tancelis, check: each table and how a command prints it; paper: LaTeX and
Markdown for a paper; emit: the writer all of them print through."""
