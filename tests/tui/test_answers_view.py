"""`a` opens the answers view: each variant's answer side by side, where it parts from the
baseline's, and what ran; hostile text stays text (design §8 "Answers")."""

from __future__ import annotations

import asyncio
import html
import re

from precmon.core.schema import ResultsDoc, from_json
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.screens.answers import NONE_YET, AnswersScreen
from tests.tui.conftest import no_meter_factory, wait_for

PROMPT = "Why is the sky blue? Answer in two sentences."


def _screen(app: PrecmonApp) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")


def _with_answers(doc: dict) -> dict:
    texts = ["The sky appears blue because of Rayleigh scattering.", "The sky appears blue [/] because of dust.", None]
    for v, text in zip(doc["variants"], texts, strict=True):
        v["answer"] = {"prompt": PROMPT, "text": text, "max_tokens": 48} | ({} if text else {"error": "HTTP 500"})
    doc["variants"][1]["weights"] = {"shares": {"q5_0": 0.52, "q8_0": 0.31}, "bits_per_weight": 6.165,
                                     "file_type": "Q4_K_M", "main_type": "Q5_0"}  # fmt: skip
    doc["variants"][1]["compute_path"] = {"backend": "CPU", "words": "CPU", "kernel": "CPU kernels for Q5_0"}
    doc["variants"][2]["compute_path"] = {  # a vLLM log's kernel names are stored as logged: shown as text
        "backend": "CUDA", "engine": "vLLM", "words": "CUDA", "kernel": "FP8 weight-only: [/]Marlin[bold]X\x1b[31m",
    }  # fmt: skip
    return doc


def test_a_shows_the_answers_side_by_side_and_where_they_part(cpu_doc):
    async def scenario():
        app = PrecmonApp(
            TuiConfig(poll_server=False),
            initial_results=from_json(ResultsDoc, _with_answers(cpu_doc)),
            meter_factory=no_meter_factory,
        )
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AnswersScreen), 5)
            await pilot.pause()
            text = _screen(app)
            assert "Rayleigh scattering" in text and "blue [/] because of dust" in text
            assert "parts from the baseline at word 5" in text and "n/a: HTTP 500" in text
            assert "52% Q5_0, 31% Q8_0 (file type Q4_K_M)" in text and "6.17" in text
            assert "[/]Marlin[bold]X" in text and "\x1b" not in text
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, AnswersScreen), 5)

    asyncio.run(scenario())


def test_the_view_says_when_there_are_no_answers_yet(cpu_doc):
    async def scenario():
        app = PrecmonApp(
            TuiConfig(poll_server=False), initial_results=from_json(ResultsDoc, cpu_doc), meter_factory=no_meter_factory
        )
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AnswersScreen), 5)
            await pilot.pause()
            assert NONE_YET.split(":")[0] in _screen(app)

    asyncio.run(scenario())
