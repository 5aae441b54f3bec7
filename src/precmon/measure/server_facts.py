"""What a server says about itself before a bench, written into the variant: its model (name,
size, quantization, context), version, launch flags, whether its tokenizer answers, and on chat
the template's size. The plan (measure/plan.py) is made from these facts; nothing here is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from precmon.core import registry
from precmon.core.metric_keys import KEY
from precmon.core.schema import VariantResult
from precmon.measure.chat_template import measure_template
from precmon.measure.labels.true_label import local_file, record_checkpoint, record_weights
from precmon.measure.plan import variant_label
from precmon.measure.prompts import PromptBuilder, PromptError
from precmon.servers.base import ModelInfo, ReportsFlags, Server, ServerError

NO_TOKENIZER = "no tokenizer endpoint: prompt sizes are estimated; real counts come from the server's usage"


def read_server(
    server: Server, model: str | None, label: str | None, result: VariantResult, launched: bool = False
) -> ModelInfo | None:
    """The model info (its name, label by the one rule, weights size, precision, the weights'
    real types where its file is on this machine), the version and the flags, into `result`;
    the model info, None where the server gave none. `launched`: precmon started the server."""
    info: ModelInfo | None = None
    try:
        info = server.model_info(model)
    except ServerError as exc:
        result.note(f"model info unavailable: {exc}")
    if info is not None:
        result.model = result.model or info.name
        result.label = variant_label(label, model, info)
        result.model_info = {k: v for k, v in asdict(info).items() if v is not None}
        if info.size_bytes:
            result.metrics[KEY.memory_gb] = round(info.size_bytes / 1e9, registry.digits(KEY.memory_gb))
            result.memory_source = "model weights size reported by the server"
        if result.precision is None and info.quantization:
            result.precision = info.quantization
        model_file = local_file(getattr(server, "url", ""), info.model_path, launched)
        if model_file is not None and model_file.is_file():
            record_weights(result, model_file, info.quantization)
        elif model_file is not None:
            record_checkpoint(result, model_file)
    try:
        result.server.version = server.version()
    except ServerError:
        pass
    _flags(server, model, result)
    return info


def _flags(server: Server, model: str | None, result: VariantResult) -> None:
    """`server.flags`: how the server was started, where it tells (docs/design.md §5)."""
    if not isinstance(server, ReportsFlags):
        return
    try:
        flags = server.server_flags(model)
    except ServerError:
        return
    if flags:
        result.server.flags = dict(flags)
        result.server.flags_from = server.flags_source


def prompt_builder(server: Server, model: str | None, result: VariantResult) -> PromptBuilder:
    """A builder that sizes prompts with the server's tokenizer where it answers, else by
    estimate (calibrated by the runs' usage; a note says so)."""
    counter: Callable[[str], int] | None = None

    def count_tokens(text: str) -> int:
        toks = server.tokenize(text, model)
        if toks is None:
            raise PromptError("the server's tokenizer stopped answering")
        return len(toks)

    try:
        if server.tokenize("probe", model) is not None:
            counter = count_tokens
    except ServerError:
        counter = None
    if counter is None:
        result.note(NO_TOKENIZER)
    return PromptBuilder(counter)


def chat_template(
    server: Server, builder: PromptBuilder, model: str | None, timeout_s: float, result: VariantResult
) -> None:
    """Chat: the template's tokens, so that prompts hit their sizes by usage (docs/design.md §4)."""
    size = measure_template(server, builder, model, timeout_s)
    builder.template_tokens = size.tokens
    result.chat_template_tokens = size.tokens
    result.chat_template_from = size.source
    if size.problem:
        result.note(size.problem)
