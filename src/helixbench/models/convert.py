"""The ``prepare_local_model`` job: a GGUF file dequantised once into a plain
transformers directory, which then loads in under a second (:mod:`.gguf` holds the
file's facts, :mod:`.local` the backend that loads either)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .gguf import CONVERSION, CONVERTED_INFO, gguf_parsed_once
from .local import TransformersModel


def convert_gguf(spec: dict, out_dir: Path) -> dict:
    """Dequantise the spec's GGUF file once into a plain transformers directory.

    Loading a GGUF file costs ~30 s (the file is parsed and dequantised in Python);
    the converted directory loads in under a second with the same weights (float32)
    and the same tokenizer. Written to a temporary directory, then renamed.
    """
    import torch
    import transformers
    from safetensors.torch import save_model

    model = TransformersModel(spec)
    with gguf_parsed_once():
        tokenizer, loaded, _, _ = model._loaded
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(loaded, str(tmp / "model.safetensors"))  # handles the tied embeddings
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain float32 now
    (tmp / "config.json").write_text(json.dumps(config, indent=1))
    loaded.generation_config.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    info = {
        "identity": model.weights_identity(),
        "conversion": CONVERSION,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    (tmp / CONVERTED_INFO).write_text(json.dumps(info, indent=1))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return info
