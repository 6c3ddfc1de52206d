"""MkDocs hook (mkdocs.yml `hooks:`): fills docs/cli.md's marker with the CLI reference, built
from the app itself when the site builds (stimkit.cli.reference), so it is never out of date."""

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    from stimkit.cli.reference import reference

    # The reference's sections are `##`; the page's own title stays the only `#`.
    return markdown.replace(MARKER, reference())
