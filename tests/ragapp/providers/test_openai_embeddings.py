"""The `openai` embeddings provider against a real OpenAI-compatible HTTP server on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragapp.providers.openai_embeddings import OpenAICompatibleEmbeddings

FAST = {"retry-after-ms": "10"}  # the openai client honours it: keeps retry tests quick


class EmbeddingServer(ThreadingHTTPServer):
    """Answers /v1/embeddings; fails the first requests as scripted in `failures`."""

    def __init__(self, failures: list[tuple[int, dict]]):
        super().__init__(("127.0.0.1", 0), EmbeddingHandler)
        self.failures = list(failures)
        self.requests: list[dict] = []


class EmbeddingHandler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers["Authorization"]
        self.server.requests.append({"path": self.path, "body": body, "auth": auth})
        if self.server.failures:
            status, headers = self.server.failures.pop(0)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "try later"}}')
            return
        inputs = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(text)), 1.0, 0.0]}
            for i, text in enumerate(inputs)
        ]
        payload = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        encoded = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)


@pytest.fixture
def serve():
    servers = []

    def start(failures=()):
        server = EmbeddingServer(list(failures))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()


def provider(server, batch_size=2, model="text-embedding-3-small"):
    host, port = server.server_address
    return OpenAICompatibleEmbeddings(
        model=model, api_key="sk-test", base_url=f"http://{host}:{port}/v1", batch_size=batch_size
    )


def test_texts_are_sent_in_batches_in_order(serve):
    server = serve()
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = provider(server).embed_documents(texts)
    assert [v[0] for v in vectors] == [1.0, 2.0, 3.0, 4.0, 5.0]
    batches = [r["body"]["input"] for r in server.requests]
    assert batches == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert server.requests[0]["body"]["model"] == "text-embedding-3-small"


def test_429_and_5xx_are_retried_with_backoff(serve):
    server = serve(failures=[(429, {"retry-after-ms": "10"}), (500, FAST), (503, FAST)])
    vectors = provider(server).embed_documents(["only"])
    assert vectors == [[4.0, 1.0, 0.0]]
    assert len(server.requests) == 4  # three failures, then success


def test_retries_are_bounded_and_the_error_surfaces(serve):
    server = serve(failures=[(500, FAST)] * 20)
    with pytest.raises(Exception, match=r"500|Internal|try later"):
        provider(server).embed_documents(["x"])
    assert len(server.requests) == 7  # the first try plus MAX_RETRIES


def test_unknown_model_dimension_is_probed_once(serve):
    server = serve()
    embeddings = provider(server, model="nomic-embed-text")
    assert embeddings.dimensions == 3
    assert embeddings.dimensions == 3
    assert len(server.requests) == 1


def test_no_client_is_built_until_first_use():
    embeddings = OpenAICompatibleEmbeddings(
        model="text-embedding-3-small", api_key="", base_url=None, batch_size=8
    )
    assert embeddings.dimensions == 1536  # known model: no request, no key needed
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        embeddings.embed_query("x")
