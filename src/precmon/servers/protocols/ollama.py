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
- `--endpoint chat` streams `/api/chat` instead: the prompt is one user message wrapped in the
  model's template (its tokens are in `prompt_eval_count`), text arrives in `message.content`
  and `message.thinking` (reasoning, counted as generated text), the final object is the same.
- `load_duration` above a quarter second means the model was loaded inside the request: the
  run is marked, since its TTFT includes the load. `ensure_loaded` prevents it.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from precmon.servers.adapter import Adapter
from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.protocols.openai import finish_text
from precmon.servers.wire.fields import (
    FieldError,
    as_dict,
    count_field,
    dict_field,
    dicts,
    float_field,
    int_field,
    list_field,
    str_field,
)
from precmon.servers.wire.stream import NDJSONSink, error_text, json_line, set_error

NS = 1e-9
LOAD_IN_REQUEST_S = 0.25
MAX_DURATION_NS = 1e9 * 86400 * 365  # a year: any longer duration is a broken server
# Prompts sharing at most this many leading characters share only BOS, "[" and a hex digit or
# two of the nonce: a few tokens Ollama always reuses, which we do not count as a cache hit.
TRIVIAL_SHARED_CHARS = 16
PS_LACKS = "loaded state and runtime context (num_ctx)"


def _parse_size(s: Any) -> int | None:
    """'8.0B' / '70.6B' / '567.72M' → parameter count."""
    if not isinstance(s, str) or not s or len(s) > 32:
        return None
    mult = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(s[-1].upper())
    try:
        n = float(s[:-1]) * mult if mult else float(s)
    except ValueError:
        return None
    return int(n) if 0 <= n < 1e15 else None


def _name(m: dict[str, Any]) -> str | None:
    return str_field(m, "name") or str_field(m, "model")


class OllamaServer(Adapter):
    kind: str = "ollama"
    health_path: ClassVar[str] = "/api/version"
    probe_path: ClassVar[str | None] = "/api/version"
    confirm_path: ClassVar[str | None] = "/api/tags"  # the model list every request needs a name from

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

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        # {"version": "0.5.7"}; vLLM has no /api/version, so this path alone tells
        return status == 200 and isinstance(body, dict) and isinstance(body.get("version"), str)

    @staticmethod
    def confirms(status: int, body: object) -> bool:
        return status == 200 and isinstance(body, dict) and isinstance(body.get("models"), list)

    # ---- identity ---------------------------------------------------------------------------

    def version(self) -> str | None:
        return str_field(self.optional_json("/api/version", "version"), "version", limit=100)

    def _tags(self) -> list[dict[str, Any]]:
        """`/api/tags` models (the installed ones) that have a name."""
        return [m for m in dicts(list_field(self.get_json("/api/tags"), "models")) if _name(m)]

    def _running(self) -> dict[str, dict[str, Any]] | None:
        """`/api/ps` by model name; None when the server has no /api/ps (older Ollama, proxies)."""
        body = self.optional_json("/api/ps", PS_LACKS)
        if body is None:
            return None
        out: dict[str, dict[str, Any]] = {}
        for m in dicts(list_field(body, "models")):
            name = _name(m)
            if name:
                out[name] = m
        return out

    def list_models(self) -> list[ModelInfo]:
        running = self._running()
        out = []
        for m in self._tags():
            name = str(_name(m))
            d = dict_field(m, "details")
            ps = (running or {}).get(name) or {}
            out.append(
                ModelInfo(
                    name=name,
                    size_bytes=int_field(m, "size"),
                    n_params=_parse_size(d.get("parameter_size")),
                    context_tokens=int_field(ps, "context_length", min=1),
                    quantization=str_field(d, "quantization_level", limit=64),
                    loaded=None if running is None else name in running,
                    source="/api/tags, /api/ps" if running is not None else "/api/tags",
                    notes=self.notes_text(),
                )
            )
        return out

    def model_info(self, model: str | None) -> ModelInfo | None:
        model = model or self.default_model()
        if model is None:
            return None
        show = as_dict(self.http_optional_post("/api/show", {"model": model}, "parameter count, architecture"))
        d = dict_field(show, "details")
        mi = dict_field(show, "model_info")
        arch = str_field(mi, "general.architecture", limit=64)
        try:
            tags = {_name(m): m for m in self._tags()}
        except ServerError as exc:
            self.note(f"/api/tags unavailable ({exc}): weights size n/a")
            tags = {}
        running = self._running()
        ps = (running or {}).get(model) or {}
        # The context that matters is the one the runner was given (num_ctx), not the trained one.
        ctx = int_field(ps, "context_length", min=1) or self.num_ctx
        src = "/api/show, /api/tags" + (", /api/ps" if running is not None else "")
        src += "" if ctx else " (context: load the model to know num_ctx)"
        return ModelInfo(
            name=model,
            size_bytes=int_field(tags.get(model), "size"),
            n_params=int_field(mi, "general.parameter_count") or _parse_size(d.get("parameter_size")),
            context_tokens=ctx,
            quantization=str_field(d, "quantization_level", limit=64),
            loaded=None if running is None else bool(ps),
            source=src + (f" ({arch})" if arch else ""),
            notes=self.notes_text(),
        )

    def http_optional_post(self, path: str, payload: dict[str, Any], lacks: str) -> object | None:
        """POST to an endpoint the measurement can do without: None (and a note) when it fails."""
        try:
            return self.post_json(path, payload, timeout_s=10.0)
        except ServerError as exc:
            self.note(f"{path} unavailable ({exc}): {lacks} n/a")
            return None

    def default_model(self) -> str | None:
        """Ollama needs a model name in every request: the loaded one, else the first installed."""
        if self._default is None:
            running = list(self._running() or ())
            tags = [_name(m) for m in self._tags()]
            self._default = (running or tags or [None])[0]
        return self._default

    # ---- switching ---------------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        return {"num_ctx": self.num_ctx} if self.num_ctx else {}

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        """Unload every other model, load `model` (an empty generate), wait until /api/ps has it.

        Without /api/ps (older Ollama, proxies) the load request alone is relied on: it returns
        when the model is loaded; whether others share memory is then unknown (noted).
        """
        model = model or self.default_model()
        if model is None:
            raise ServerError(f"{self.url}: Ollama has no models (ollama pull one)")
        deadline = time.monotonic() + timeout_s
        for name in self._running() or ():
            if name != model:
                self.post_json("/api/generate", {"model": name, "keep_alive": 0}, timeout_s=60.0)
        body: dict[str, Any] = {"model": model, "keep_alive": self.keep_alive, "stream": False}
        if self._options():
            body["options"] = self._options()
        self.http.post_json("/api/generate", body, timeout_s)  # returns when loaded
        while True:
            running = self._running()
            if running is None or (model in running and len(running) == 1):
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
        prompt: dict[str, Any] = (
            {"messages": [{"role": "user", "content": req.prompt}]}
            if req.endpoint == "chat"
            else {"prompt": req.prompt, "raw": True}
        )
        return {
            "model": req.model or self.default_model(),
            **prompt,
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
        """One `/api/generate` (or, for chat, `/api/chat`) stream through the shared loop (`HttpClient.stream`)."""
        payload = self.payload(req)
        shared = self._shared_prefix_chars(req.prompt)
        sinks: list[NDJSONSink] = []

        def start(res: StreamResult) -> NDJSONSink:
            sinks.append(NDJSONSink(res, self._on_line))
            return sinks[-1]

        path = "/api/chat" if req.endpoint == "chat" else "/api/generate"
        res = self.http.stream(path, payload, req.timeout_s, start)
        self._finish(sinks[-1].final, res, req, shared, expected_prompt_tokens)
        return res

    def _finish(
        self, final: dict[str, Any] | None, res: StreamResult, req: StreamRequest, shared: int, expected: int | None
    ) -> None:
        """Counts and timings from the final object; without one the stream was truncated."""
        if final is None:
            set_error(res, "stream ended without a final object (done: true): truncated")
            return
        try:
            self._apply_final(final, res, req, shared, expected)
        except FieldError as exc:  # an impossible count or duration
            set_error(res, f"impossible value from the server: {exc}")

    def _on_line(self, line: bytes, now: float, res: StreamResult) -> dict[str, Any] | None:
        obj = json_line(line, res)
        if obj is None:
            return None
        if obj.get("error"):
            set_error(res, f"server error in stream: {error_text(obj['error'])}")
            return None
        res.n_chunks += 1
        message = obj.get("message")
        if isinstance(message, dict):  # /api/chat
            content, thinking = message.get("content"), message.get("thinking")
        else:
            content, thinking = obj.get("response"), obj.get("thinking")
        res.add_text(now, content if isinstance(content, str) else "", thinking if isinstance(thinking, str) else "")
        return obj if obj.get("done") is True else None

    @staticmethod
    def _duration_ns(f: dict[str, Any], key: str) -> float | None:
        """A duration in ns (strings and floats accepted); impossible ones raise FieldError."""
        if f.get(key) is None:
            return None
        ns = float_field(f, key, min=0.0, max=MAX_DURATION_NS)
        if ns is None:
            raise FieldError(f"final.{key} = {f.get(key)!r:.40}: not a duration in ns")
        return ns

    def _apply_final(
        self, f: dict[str, Any], res: StreamResult, req: StreamRequest, shared_chars: int, expected: int | None
    ) -> None:
        reason = f.get("done_reason")
        res.finish_reason = finish_text(reason) if reason else "stop"
        ev_n = count_field(f, "eval_count", where="final")
        pe_n = count_field(f, "prompt_eval_count", where="final")
        pe_ns, ev_ns = self._duration_ns(f, "prompt_eval_duration"), self._duration_ns(f, "eval_duration")
        load_ns, total_ns = self._duration_ns(f, "load_duration"), self._duration_ns(f, "total_duration")
        res.completion_tokens = ev_n
        res.prompt_tokens = pe_n
        st = res.server_timings
        raw = {
            "prompt_eval_count": pe_n,
            "prompt_eval_duration": pe_ns,
            "eval_count": ev_n,
            "eval_duration": ev_ns,
            "load_duration": load_ns,
            "total_duration": total_ns,
        }
        for k, v in raw.items():
            if v is not None:
                st[k] = f[k] if isinstance(f[k], (int, float)) else v
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
        load_s = (load_ns or 0) * NS
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
