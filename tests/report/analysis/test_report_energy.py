"""Monthly energy: kWh = W × h/day × 30 ÷ 1000, cost at a price."""

from __future__ import annotations

import pytest

from precmon.report.analysis.energy import monthly_energy, monthly_energy_lines, monthly_kwh


def test_monthly_kwh_matches_the_source_document():
    # the source's own examples: 34 W around the clock ≈ 24 kWh; 350 W at 10 h/day ≈ 105 kWh
    assert monthly_kwh(34.0) == pytest.approx(24.48)
    assert monthly_kwh(350.0, 10) == pytest.approx(105.0)


def test_per_variant_with_hours_and_price(spark_doc):
    e = monthly_energy(spark_doc, hours_per_day=10, price_per_kwh=0.30)
    fp16 = e[0]
    assert fp16.watts == 34.2
    assert fp16.kwh_24h == pytest.approx(34.2 * 24 * 30 / 1000)
    assert fp16.kwh_at_hours == pytest.approx(34.2 * 10 * 30 / 1000)
    assert fp16.cost_24h == pytest.approx(34.2 * 24 * 30 / 1000 * 0.30)
    assert e[3].watts is None and e[3].kwh_24h is None and e[3].cost_24h is None


def test_lines(spark_doc):
    lines = monthly_energy_lines(spark_doc, hours_per_day=10, price_per_kwh=0.30)
    assert lines[0] == ("FP16: 34.2 W → 24.6 kWh/month at 24 h/day (cost 7.39), 10.3 kWh/month at 10 h/day (cost 3.08)")
    assert lines[3] == "INT4-AWQ: decode power not measured"
    assert monthly_energy_lines(spark_doc)[1] == "FP8: 29.1 W → 21.0 kWh/month at 24 h/day"
