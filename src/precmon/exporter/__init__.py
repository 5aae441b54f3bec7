"""The OpenMetrics exporter (docs/design.md §3 `precmon exporter`, §8 "Fleet").

Users with more than one box already run Prometheus and Grafana; precmon plugs into them instead
of inventing its own fleet view. Everything here is headless: collectors that turn the power
sampler's latest samples, the watched servers' state and the newest results files into metric
families at scrape time (`prometheus_client` renders and escapes them), the HTTP server, and the
atomic textfile for node_exporter. The catalog of names lives in `catalog.py`.
"""
