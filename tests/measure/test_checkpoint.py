"""A safetensors checkpoint's weights from its config.json: NVFP4 recognised on vLLM's side too
(design §8 "True labels")."""

from __future__ import annotations

import json

import pytest

from precmon.core.schema import ResultsDoc, VariantResult
from precmon.measure.labels.checkpoint import main_type_of, read_checkpoint
from precmon.measure.labels.true_label import local_file, record_checkpoint
from precmon.report.analysis.answers import what_ran
from precmon.servers.protocols.vllm import VLLMServer

W8A8 = {  # the vLLM test bed's w8a8-int8 checkpoint, as written
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8}}},
}


@pytest.mark.parametrize(
    ("config", "main"),
    [
        ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}, "NVFP4"),
        ({"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}}, "NVFP4"),
        ({"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}, "FP8"),
        ({"quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized"}}, "FP8"),
        ({"quantization_config": {"quant_method": "mxfp4"}}, "MXFP4"),
        ({"quantization_config": W8A8}, "INT8"),
        ({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}, "INT4"),
        ({"torch_dtype": "bfloat16"}, "BF16"),
        ({"quantization_config": {"quant_method": "awq", "bits": "4"}}, None),  # wrong type: unknown
        ({"quantization_config": {"quant_method": "bitsandbytes"}}, None),
        ({"torch_dtype": 3}, None),
    ],
)
def test_the_weights_type_is_read_from_the_quantization_config(config, main):
    got, told = main_type_of(config)
    assert got == main and told


def test_a_vllm_checkpoint_on_this_machine_names_its_precision(tmp_path):
    folder = tmp_path / "Llama-NVFP4"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}})
    )
    info = VLLMServer("http://127.0.0.1:8000")._model_from_entry({"id": "llama", "root": str(folder)})
    assert info.model_path == str(folder)
    found = local_file("http://127.0.0.1:8000", info.model_path, launched=False)
    assert found == folder
    r = VariantResult("llama", None, "llama")
    record_checkpoint(r, found)
    assert r.precision == "NVFP4" and r.weights["main_type"] == "NVFP4"
    row = what_ran(ResultsDoc(variants=[VariantResult("llama", weights=r.weights)]))[0]
    assert row.weights.startswith("NVFP4 (quantization_config modelopt NVFP4)")
    declared = VariantResult("llama", "nvfp4-w4a4", "llama")
    record_checkpoint(declared, found)
    assert declared.precision == "nvfp4-w4a4"  # the user's word stands


def test_a_hub_id_or_a_broken_config_reads_nothing(tmp_path):
    assert local_file("http://127.0.0.1:8000", "meta-llama/Llama-3.1-8B", launched=False) is None
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("[1, 2")
    assert read_checkpoint(bad) is None
    (bad / "config.json").write_text("[1, 2]")
    assert read_checkpoint(bad) is None
