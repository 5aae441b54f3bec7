"""precmon.report: the comparison table, roofline note, workload advice, monthly energy and exports.

Plain Python (never imports textual). Entry points:

- `table.build_table(doc, baseline=None) -> ComparisonTable` — the data model the TUI renders;
  `table.to_rich_table(doc, baseline=None)` for the terminal; `sparkline.sparkline(values, width)`.
- `roofline.roofline(doc, bandwidth_gbs=None, baseline=None) -> Roofline`
- `advice.advise(doc, baseline=None) -> list[Advice]`
- `energy.monthly_energy(doc, hours_per_day=None, price_per_kwh=None)`, `energy.monthly_kwh(w, h)`
- `export.render(doc, fmt, **options)`, `export.export_all(doc, out_dir, stem="results") -> {fmt: Path}`
- `compare.compare_table(docs)`, `compare.render_compare(docs, fmt, names)`
- `cli_entry.run_report(...)`, `cli_entry.run_compare(...)` — exit codes for `precmon report/compare`.
"""
