"""The embedded default embedder: the real packaged int8 MiniLM on the CPU."""

import numpy as np
import pytest

from ragapp.providers.local_embeddings import LocalOnnxEmbeddings
from ragapp.providers.model_files import ModelFileError, verify_file


@pytest.fixture(scope="module")
def model():
    return LocalOnnxEmbeddings(batch_size=4)


def cosine(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_paraphrase_scores_far_above_an_unrelated_pair(model):
    question, paraphrase, unrelated = model.embed_documents(
        [
            "How do I reset my password?",
            "Steps to change your account password",
            "The quarterly revenue grew by four percent in Europe.",
        ]
    )
    related_score = cosine(question, paraphrase)
    unrelated_score = cosine(question, unrelated)
    assert related_score > 0.6
    assert unrelated_score < 0.2
    assert related_score - unrelated_score > 0.5


def test_vectors_are_unit_length_with_384_dimensions(model):
    vectors = np.array(model.embed_documents(["short", "a much longer sentence " * 20]))
    assert vectors.shape == (2, 384) and model.dimensions == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batching_and_length_sorting_do_not_change_results(model):
    texts = [f"sentence number {i} " + "padding words " * (i % 7) * 10 for i in range(11)]
    batched = np.array(model.embed_documents(texts))
    one_by_one = np.array([model.embed_query(t) for t in texts])
    assert np.allclose(batched, one_by_one, atol=1e-4)


def test_a_tampered_model_file_is_refused(tmp_path):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"x" * 10)
    with pytest.raises(ModelFileError, match="expected 22"):
        verify_file(fake, size=22, sha256="0" * 64)
    with pytest.raises(ModelFileError, match="sha256"):
        verify_file(fake, size=10, sha256="0" * 64)
