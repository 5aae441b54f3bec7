"""precmon.report: a results document read once, built into one `Report`, rendered per format.

Plain Python (never imports textual). The flow, top to bottom, one step per place:

- Read: `load.load_document(path) -> ResultsDoc` validates a precmon file (one-line `DocumentError`
  naming file and field) and returns the typed model (`precmon.core.schema`: `ResultsDoc`,
  `VariantResult`, `Run`, `Host`), which every step below reads by attribute; `importers/` reads
  other tools' files as one (`importers.dispatch.load_any`: llama-bench `-o json`, llama-benchy's report).
- The table model (this folder): `table.build_table(doc, baseline=None) -> ComparisonTable`, the
  model every renderer and the TUI draw; its rows come from `precmon.core.registry` through
  `rows.row_specs` (and `depth_rows` for the decode-vs-depth row), each keyed by a
  `core.cells.RowKey`; `fmt` and `sparkline` write its numbers and series.
- Sections: `analysis/` computes what the report says beside the table (`advice.advise`,
  `roofline.roofline`, `energy.monthly_energy`, quality, KV, concurrency, fleet, compare,
  environment differences); `sections.build_report(doc, ...)` / `sections.build_compare(docs,
  names)` assemble them into one `Report`, built once.
- Render: `render/` holds one module per output (`terminal`, `markdown`, `html/`, `csv`,
  `llamabench`); they never import each other. `render.terminal.to_rich_table(doc)` is the table
  alone for headless bench/sweep.
- Dispatch: `export.RENDERERS` maps every format of `formats.FORMATS` to its renderer;
  `export.render(doc, fmt, **options)`, `export.render_compare(docs, fmt, names)`,
  `export.export_all(doc, out_dir, stem="results") -> {fmt: Path}`.

Import-linter contracts keep the order: table model < analysis < sections < render < export, the
renderers independent, the importers free of the renderers, and the whole report free of
measure, servers, power and sweep (it reads only `precmon.core`). The commands themselves
(`precmon report`, `precmon compare`) are in `precmon.cli.commands.report_cmd`.
"""
