"""precmon.report: the comparison table, roofline note, workload advice, monthly energy and exports.

Plain Python (never imports textual). The flow, one module per step:

- `load.load_document(path) -> ResultsDoc` — read and validate a results file (one-line
  `DocumentError` naming file and field); `model.ResultsDoc` & co. type the document.
- `table.build_table(doc, baseline=None) -> ComparisonTable` — the data model the TUI renders;
  its rows come from `precmon.core.registry` through `rows.row_specs`.
- `roofline.roofline(...)`, `advice.advise(...)`, `energy.monthly_energy(...)` — the further sections.
- `sections.build_report(doc, ...)` / `sections.build_compare(docs, names)` -> `Report`, built once.
- Renderers of a `Report`: `terminal.render_terminal`, `markdown.render_markdown`,
  `htmlpage.render_html`, and `export.RENDERERS` for every format of `formats.FORMATS`;
  `export.render(doc, fmt, **options)`, `export.render_compare(docs, fmt, names)`,
  `export.export_all(doc, out_dir, stem="results") -> {fmt: Path}`.
- `terminal.to_rich_table(doc)` — the table alone for headless bench/sweep.

The commands themselves (`precmon report`, `precmon compare`) are in `precmon.cli.report_cmd`.
"""
