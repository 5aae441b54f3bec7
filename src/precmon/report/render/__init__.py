"""One module per output format of a built `sections.Report`: terminal (rich), markdown, html/,
csv and llamabench; they never import each other (import-linter contract), only the model above."""
