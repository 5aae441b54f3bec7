"""The server kinds precmon speaks to: the one list, read by detection, discovery and the CLI.

Each kind names its adapter class, the ports it usually listens on and its place in the
detection order (most specific probe first; a generic `{"version": ...}` at `/version` last,
since several servers could answer it; `openai` is the fallback, never probed). This module
imports no adapter and no httpx, so `precmon --help` stays fast: `ServerKind.adapter()` imports
the class when a server is opened (`precmon.servers.detect.ADAPTERS` resolves them all).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from precmon.servers.adapter import Adapter


#: The request shapes every kind can be benched with (`--endpoint`, sweep key `endpoint`; docs/design.md
#: §3): a raw prompt, or the prompt as one user message in the model's chat template. Here, not in
#: `servers.base`, so the CLI parser can offer them without importing an adapter module.
ENDPOINTS = ("completions", "chat")


@dataclass(frozen=True)
class ServerKind:
    """One kind of server: its name (`--server NAME`), adapter and where it usually listens."""

    name: str
    module: str  # precmon.servers.<module>
    class_name: str
    ports: tuple[int, ...] = ()
    detect_order: int | None = None  # None: never probed (the generic fallback)

    def adapter(self) -> type[Adapter]:
        cls = getattr(importlib.import_module(f"precmon.servers.protocols.{self.module}"), self.class_name)
        assert cls.kind == self.name, f"{self.class_name}.kind is {cls.kind!r}, registered as {self.name!r}"
        return cls


# In discovery order: with several servers up, the TUI picks the first healthy one listed here.
KINDS: tuple[ServerKind, ...] = (
    ServerKind("openai", "openai", "OpenAIServer"),
    ServerKind("vllm", "vllm", "VLLMServer", (8000,), detect_order=5),
    ServerKind("llamacpp", "llamacpp", "LlamaCppServer", (8080,), detect_order=0),
    ServerKind("ollama", "ollama", "OllamaServer", (11434,), detect_order=2),
    ServerKind("sglang", "sglang", "SGLangServer", (30000,), detect_order=1),
    ServerKind("lmstudio", "lmstudio", "LMStudioServer", (1234,), detect_order=3),
    ServerKind("tgi", "tgi", "TGIServer", (3000,), detect_order=4),
)
FALLBACK = "openai"

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
BY_NAME: dict[str, ServerKind] = {k.name: k for k in KINDS}
DETECTION_ORDER: tuple[ServerKind, ...] = tuple(
    sorted((k for k in KINDS if k.detect_order is not None), key=lambda k: k.detect_order or 0)
)
USUAL_PORTS: dict[int, str] = {port: k.name for k in KINDS for port in k.ports}
