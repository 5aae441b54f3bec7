"""Ollama through its native API: `/api/generate` streaming NDJSON, durations in nanoseconds.

Why native rather than Ollama's OpenAI layer: `raw: true` sends our prompt with no template
(every token is ours), and the final object carries Ollama's own counts and timings
(`prompt_eval_count/_duration`, `eval_count/_duration`, `load_duration`), which we keep as
server timings in llama.cpp's vocabulary (`predicted_per_second` = eval_count ÷ eval_duration,
the "eval rate" of `ollama run --verbose`; `prompt_per_second` likewise).

What Ollama cannot do, and what we do instead:
- No `ignore_eos`: the model may stop early (`done_reason` "stop" before `num_predict`). The
  run then has fewer tokens than asked and the measurement layer rejects it.
- No switch for prompt caching. The prompt builder's nonce at the start makes a real hit
  impossible beyond BOS and the nonce's first character. We can *detect*: (1) a prompt that
  repeats a long prefix of one we sent before (we remember our recent prompts), reported as an
  estimated `cached_tokens`; (2) older Ollama (llama.cpp runner) counted only uncached tokens
  in `prompt_eval_count` and left it out when the whole prompt was cached: with
  `expected_prompt_tokens` known (see `stream(..., expected_prompt_tokens=)`) a shortfall
  becomes `cached_tokens`, and a missing count marks the run. We cannot detect another client's
  identical prompt prefix under current Ollama, whose count includes cached tokens and whose
  `prompt_eval_duration` simply shrinks (no tokenizer endpoint to check against).
- Prompts longer than the context (`num_ctx`) are truncated silently; a shortfall against the
  expected size shows it (same check as above).
- `load_duration` above a quarter second means the model was loaded inside the request: the
  run is marked, since its TTFT includes the load. `ensure_loaded` prevents it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.openai import _IDENTITY, OpenAIServer, describe_http_error

NS = 1e-9
LOAD_IN_REQUEST_S = 0.25
# Prompts sharing at most this many leading characters share only BOS, "[" and a hex digit or
# two of the nonce: a few tokens Ollama always reuses, which we do not count as a cache hit.
TRIVIAL_SHARED_CHARS = 16


def _parse_size(s: Any) -> int | None:
    """'8.0B' / '70.6B' / '567.72M' → parameter count."""
    if not isinstance(s, str) or not s:
        return None
    mult = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(s[-1].upper())
    try:
        return int(float(s[:-1]) * mult) if mult else int(float(s))
    except ValueError:
        return None


class OllamaServer(OpenAIServer):
    kind = "ollama"
    health_path = "/api/version"

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        num_ctx: int | None = None,
        keep_alive: str | int = "10m",
    ) -> None:
        super().__init__(url, api_key, timeout_s)
        self.num_ctx = num_ctx
        self.keep_alive = keep_alive
        self._default: str | None = None
        self._recent: list[str] = []  # our recent prompts, newest last

    # ---- identity ---------------------------------------------------------------------------

    def version(self) -> str | None:
        v = self._get_json("/api/version").get("version")
        return str(v) if v else None

    def _running(self) -> dict[str, dict[str, Any]]:
        return {m.get("name") or m.get("model"): m for m in self._get_json("/api/ps").get("models") or []}

    def list_models(self) -> list[ModelInfo]:
        running = self._running()
        out = []
        for m in self._get_json("/api/tags").get("models") or []:
            name = m.get("name") or m.get("model")
            d = m.get("details") or {}
            ps = running.get(name) or {}
            out.append(
                ModelInfo(
                    name=name,
                    size_bytes=m.get("size"),
                    n_params=_parse_size(d.get("parameter_size")),
                    context_tokens=ps.get("context_length"),
                    quantization=d.get("quantization_level"),
                    loaded=name in running,
                    source="/api/tags, /api/ps",
                )
            )
        return out

    def model_info(self, model: str | None) -> ModelInfo | None:
        model = model or self.default_model()
        if model is None:
            return None
        show = self._post_json("/api/show", {"model": model})
        d = show.get("details") or {}
        mi = show.get("model_info") or {}
        arch = mi.get("general.architecture")
        tags = {m.get("name"): m for m in self._get_json("/api/tags").get("models") or []}
        ps = self._running().get(model) or {}
        # The context that matters is the one the runner was given (num_ctx), not the trained one.
        ctx = ps.get("context_length") or self.num_ctx
        src = "/api/show, /api/tags, /api/ps" + ("" if ctx else " (context: load the model to know num_ctx)")
        return ModelInfo(
            name=model,
            size_bytes=(tags.get(model) or {}).get("size"),
            n_params=mi.get("general.parameter_count") or _parse_size(d.get("parameter_size")),
            context_tokens=ctx,
            quantization=d.get("quantization_level"),
            loaded=bool(ps),
            source=src + (f" ({arch})" if arch else ""),
        )

    def default_model(self) -> str | None:
        """Ollama needs a model name in every request: the loaded one, else the first installed."""
        if self._default is None:
            running = list(self._running())
            tags = [m.get("name") for m in self._get_json("/api/tags").get("models") or []]
            self._default = (running or tags or [None])[0]
        return self._default

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        return None  # Ollama has no tokenizer endpoint

    # ---- switching ---------------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        return {"num_ctx": self.num_ctx} if self.num_ctx else {}

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        """Unload every other model, load `model` (an empty generate), wait until /api/ps has it."""
        model = model or self.default_model()
        if model is None:
            raise ServerError(f"{self.url}: Ollama has no models (ollama pull one)")
        deadline = time.monotonic() + timeout_s
        for name in self._running():
            if name != model:
                self._post_json("/api/generate", {"model": name, "keep_alive": 0}, timeout_s=60.0)
        body: dict[str, Any] = {"model": model, "keep_alive": self.keep_alive, "stream": False}
        if self._options():
            body["options"] = self._options()
        self._post_json("/api/generate", body, timeout_s=timeout_s)  # returns when loaded
        while True:
            running = self._running()
            if model in running and len(running) == 1:
                return
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{self.url}: model {model!r} not alone in memory after {timeout_s:.0f} s "
                    f"(/api/ps lists {sorted(running)})"
                )
            time.sleep(0.1)

    # ---- streaming ---------------------------------------------------------------------------
    def payload(self, req: StreamRequest) -> dict[str, Any]:
        options: dict[str, Any] = {"num_predict": req.max_tokens, "temperature": req.temperature, **self._options()}
        return {
            "model": req.model or self.default_model(),
            "prompt": req.prompt,
            "raw": True,
            "stream": True,
            "keep_alive": self.keep_alive,
            "options": options,
        }

    def _shared_prefix_chars(self, prompt: str) -> int:
        best = 0
        for prev in self._recent:
            n = min(len(prev), len(prompt))
            k = 0
            while k < n and prev[k] == prompt[k]:
                k += 1
            best = max(best, k)
        self._recent = (self._recent + [prompt])[-8:]
        return best

    def stream(self, req: StreamRequest, expected_prompt_tokens: int | None = None) -> StreamResult:
        payload = self.payload(req)
        shared = self._shared_prefix_chars(req.prompt)
        res = StreamResult(sent_s=time.perf_counter())
        url = self.url + "/api/generate"
        buf = b""
        final: dict[str, Any] | None = None
        try:
            with self._client.stream(
                "POST",
                "/api/generate",
                json=payload,
                headers=_IDENTITY,
                timeout=httpx.Timeout(req.timeout_s, connect=10.0),
            ) as r:
                res.http_status = r.status_code
                if r.status_code != 200:
                    body = r.read().decode(errors="replace")[:300].strip()
                    raise ServerError(f"HTTP {r.status_code} from {url}: {body}", r.status_code)
                for raw in r.iter_raw():
                    now = time.perf_counter()
                    buf += raw
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        final = self._on_line(line, now, res) or final
                if buf.strip():
                    final = self._on_line(buf, time.perf_counter(), res) or final
        except httpx.HTTPError as exc:
            if res.http_status != 200:
                raise ServerError(describe_http_error(url, exc, req.timeout_s)) from exc
            res.error = describe_http_error(url, exc, req.timeout_s)
        res.done_s = time.perf_counter()
        if final is None:
            res.error = res.error or "stream ended without a final object (done: true): truncated"
            return res
        self._apply_final(final, res, req, shared, expected_prompt_tokens)
        return res

    def _on_line(self, line: bytes, now: float, res: StreamResult) -> dict[str, Any] | None:
        line = line.strip()
        if not line:
            return None
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            res.error = res.error or f"malformed stream: not JSON: {line[:80]!r}"
            return None
        if not isinstance(obj, dict):
            res.error = res.error or f"malformed stream: unexpected {type(obj).__name__}"
            return None
        if obj.get("error"):
            res.error = res.error or f"server error in stream: {obj['error']}"
            return None
        res.n_chunks += 1
        content = obj.get("response") if isinstance(obj.get("response"), str) else ""
        thinking = obj.get("thinking") if isinstance(obj.get("thinking"), str) else ""
        res.add_text(now, content, thinking)
        return obj if obj.get("done") else None

    def _apply_final(
        self, f: dict[str, Any], res: StreamResult, req: StreamRequest, shared_chars: int, expected: int | None
    ) -> None:
        res.finish_reason = f.get("done_reason") or "stop"
        res.completion_tokens = f.get("eval_count")
        res.prompt_tokens = f.get("prompt_eval_count")
        st = res.server_timings
        for k in (
            "prompt_eval_count",
            "prompt_eval_duration",
            "eval_count",
            "eval_duration",
            "load_duration",
            "total_duration",
        ):
            if isinstance(f.get(k), (int, float)):
                st[k] = f[k]
        pe_n, pe_ns = f.get("prompt_eval_count"), f.get("prompt_eval_duration")
        ev_n, ev_ns = f.get("eval_count"), f.get("eval_duration")
        if pe_n:
            st["prompt_n"] = pe_n
        if pe_ns:
            st["prompt_ms"] = pe_ns * NS * 1000
            if pe_n:
                st["prompt_per_second"] = pe_n / (pe_ns * NS)
        if ev_n is not None:
            st["predicted_n"] = ev_n
        if ev_ns:
            st["predicted_ms"] = ev_ns * NS * 1000
            if ev_n:
                st["predicted_per_second"] = ev_n / (ev_ns * NS)
        load_s = (f.get("load_duration") or 0) * NS
        if load_s:
            st["load_ms"] = load_s * 1000
        if load_s > LOAD_IN_REQUEST_S and res.error is None:
            res.error = (
                f"Ollama loaded the model inside this request ({load_s:.2f} s): "
                "its timing includes the load (call ensure_loaded first)"
            )
        # Cache hits (see the module docstring for what can and cannot be seen).
        cached = 0
        if res.prompt_tokens is None and req.prompt and res.error is None:
            res.error = "Ollama reported no prompt_eval_count: the whole prompt came from its cache"
        if expected and res.prompt_tokens is not None and res.prompt_tokens < expected:
            cached = expected - res.prompt_tokens
            st["prompt_tokens_short_by"] = cached  # old-Ollama cache hit, or truncation to num_ctx
        if shared_chars > TRIVIAL_SHARED_CHARS and res.prompt_tokens:
            est = max(1, round(res.prompt_tokens * shared_chars / max(len(req.prompt), 1)))
            st["shared_prefix_chars"] = shared_chars
            cached = max(cached, est)
        res.cached_tokens = cached
