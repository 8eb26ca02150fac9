"""MkDocs hook: the reference pages, written at build time from their one source.

``reference/config.md`` comes from the config schema's descriptions and
``reference/cli.md`` from the command line's own help, so neither can drift from
what the workflow validates and what ``helixbench`` accepts.
"""

from __future__ import annotations

from mkdocs.structure.files import File


def on_files(files, config):
    from helixbench.cli import cli_reference_markdown
    from helixbench.config.reference import reference_markdown

    for path, text in (
        ("reference/config.md", reference_markdown()),
        ("reference/cli.md", cli_reference_markdown()),
    ):
        files.append(File.generated(config, path, content=text))
    return files
