"""The report's Settings line says when prompts went through the chat endpoint (sizes include its template)."""

from __future__ import annotations

from report_helpers import typed

from precmon.core.schema import ResultsDoc
from precmon.report.sections import describe_run


def _doc(endpoints: list[str | None], settings_endpoint: str | None = None) -> ResultsDoc:
    settings: dict = {"output_tokens": 64, "repeats": 3}
    if settings_endpoint:
        settings["endpoint"] = settings_endpoint
    variants = [
        {"label": f"V{i}", "server": {"kind": "vllm"} | ({"endpoint": e} if e else {})} for i, e in enumerate(endpoints)
    ]
    return typed({"settings": settings, "variants": variants})


def _settings_line(doc: ResultsDoc) -> str:
    return next(line for line in describe_run(doc) if line.startswith("Settings: "))


def test_completions_goes_unsaid() -> None:
    assert "chat" not in _settings_line(_doc(["completions", None]))


def test_all_chat() -> None:
    line = _settings_line(_doc(["chat", "chat"], "chat"))
    assert "chat endpoint (prompt sizes include the chat template)" in line
    assert " for " not in line


def test_some_variants_on_chat_are_named() -> None:
    line = _settings_line(_doc(["completions", "chat", "chat"]))
    assert "chat endpoint for V1, V2 (prompt sizes include the chat template)" in line
