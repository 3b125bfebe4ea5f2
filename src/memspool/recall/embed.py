"""The static embedding model of semantic recall: which one, whether it is on, and encoding.

A model2vec model is a folder: ``tokenizer.json``, ``model.safetensors`` (one
vector per token) and ``config.json``. A text's vector is the mean of all its
tokens' vectors, made unit length. model2vec cuts a text at ``max_length``
tokens (512) by default, which a transformer needs and a mean does not: the
cut left everything past the first 2,000 or so characters of a long memory
out of its vector (a runbook's later steps, most of a captured session), so
memspool never cuts. memspool ships a model distilled from all-MiniLM-L6-v2
(``model/``, rebuilt by ``scripts/build_model.py``); the ``semantic_model``
setting points at another folder.

Plain models (a single ``embeddings`` tensor, mean pooling) are encoded
here with numpy, the tokenizer and safetensors, the libraries model2vec is
built on: loading that way takes about a tenth of the time of
``StaticModel.from_pretrained``, which matters to a CLI search. Any other
model2vec model is handed to model2vec itself. A test holds the two equal.

Semantic recall is on when the ``semantic`` extra is installed and the
``semantic`` setting is not ``off``; ``auto`` (the default) and ``on`` differ
only in what ``memspool status`` says when the extra is missing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memspool.base import extras
from memspool.base.errors import ConfigError
from memspool.config import Config

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SHIPPED_MODEL", "Encoder", "SemanticState", "install_hint", "semantic_state"]

# numpy's OpenBLAS starts a thread per core and keeps them spinning after each
# product. A search multiplies one vector by a matrix, which one core does in
# about a millisecond; on a busy two-core machine the spinning threads took the
# cores from the search itself (71 ms a hybrid search, against 21 ms with one
# thread). So one thread, unless the user set it: numpy reads this when it is
# first imported, which in memspool happens after this module is.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

SHIPPED_MODEL: Final = Path(__file__).resolve().parent / "model"
#: The files that make a model; their bytes make its hash.
MODEL_FILES: Final = ("config.json", "tokenizer.json", "model.safetensors")
#: The README's words for adding the extra (memspool installs from a clone).
#: Texts tokenized per call while embedding many.
ENCODE_BATCH: Final = 1024


def install_hint() -> str:
    """The command that adds the semantic extra to this install (the README's
    ``pip install '.[semantic]'``, run with this interpreter in its clone)."""
    return extras.install_hint("semantic")


class Encoder:
    """One loaded model: ``encode(texts)`` gives unit-length float32 rows."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
        if missing:
            raise ConfigError(f"{folder} is not a model2vec model folder: it has no "
                              f"{', '.join(missing)}. Point semantic_model at one, or remove "
                              f"the setting to use the model memspool ships.")
        try:
            files = {name: (folder / name).read_bytes() for name in MODEL_FILES}
            digest = hashlib.sha256()
            for name, data in files.items():
                digest.update(name.encode())
                digest.update(data)
            self._plain = self._load_plain(files)
            if not self._plain:
                from model2vec import StaticModel

                self._model = StaticModel.from_pretrained(folder, normalize=True)
            self.dims = int(self.encode(["memspool"]).shape[1])
        except Exception as exc:  # noqa: BLE001 - any library's failure means "not a model"
            raise ConfigError(f"Cannot load the model in {folder}: {exc!s:.300}. Point "
                              f"semantic_model at a model2vec model folder, or remove the "
                              f"setting to use the model memspool ships.") from None
        #: Stored with every vector: a vector from another model is never compared.
        self.hash = digest.hexdigest()[:16]

    def _load_plain(self, files: dict[str, bytes]) -> bool:
        """Load a plain model from its files' bytes (read once, hashed once)."""
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        config: dict[str, Any] = json.loads(files["config.json"])
        tensors = load(files["model.safetensors"])
        if set(tensors) != {"embeddings"} or config.get("pooling", "mean") != "mean":
            return False
        self._vectors = tensors["embeddings"]
        tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        size = tokenizer.get_vocab_size()
        if size != len(self._vectors):
            raise ValueError(f"the tokenizer has {size} tokens and the model "
                             f"{len(self._vectors)} vectors")
        unk = getattr(tokenizer.model, "unk_token", None)
        self._unk = tokenizer.token_to_id(unk) if isinstance(unk, str) else None
        return True

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        import numpy as np

        if not self._plain:
            out = np.asarray(self._model.encode(texts, max_length=None),
                             dtype=np.float32).reshape(len(texts), -1)
        else:
            out = np.zeros((len(texts), self._vectors.shape[1]), dtype=np.float32)
            for start in range(0, len(texts), ENCODE_BATCH):
                encodings = self._tokenizer.encode_batch_fast(texts[start:start + ENCODE_BATCH],
                                                              add_special_tokens=False)
                for offset, encoding in enumerate(encodings):
                    ids = [i for i in encoding.ids if i != self._unk]
                    if ids:
                        out[start + offset] = self._vectors[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


@dataclasses.dataclass
class SemanticState:
    """Whether semantic recall is on and, if not, why and how to turn it on."""

    on: bool
    reason: str
    model: str
    encoder: Encoder | None = None

    def as_dict(self) -> dict[str, object]:
        return {"on": self.on, "reason": self.reason, "model": self.model,
                "model_hash": self.encoder.hash if self.encoder else None}


def semantic_state(config: Config, *, load: bool = True) -> SemanticState:
    """Is semantic recall on for ``config``; with ``load``, the loaded encoder too.

    Never raises for a missing extra (recall stays lexical); a model folder
    that cannot be loaded while the setting asks for semantic recall is a
    :class:`~memspool.base.errors.ConfigError` that says which folder and why.
    """
    folder = SHIPPED_MODEL
    if config.semantic_model:
        # A relative folder is the home's, so the drainer and the CLI read the same one.
        folder = config.home / Path(config.semantic_model).expanduser()
    model = str(folder)
    if config.semantic == "off":
        return SemanticState(False, "turned off (semantic = off); MEMSPOOL_SEMANTIC=1 or "
                                    "semantic = \"on\" in config.toml turns it on", model)
    if importlib.util.find_spec("model2vec") is None:
        asked = " (semantic = on)" if config.semantic == "on" else ""
        return SemanticState(False, f"the semantic extra is not installed{asked}: "
                                    f"{install_hint()}", model)
    if not load:
        return SemanticState(True, "on", model)
    return SemanticState(True, "on", model, _load(folder))


_LOADED: dict[Path, Encoder] = {}


def _load(folder: Path) -> Encoder:
    """The encoder of ``folder``, loaded once per process."""
    found = _LOADED.get(folder)
    if found is None:
        found = _LOADED[folder] = Encoder(folder)
    return found
