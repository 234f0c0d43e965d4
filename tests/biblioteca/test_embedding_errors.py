"""Embedding errors name the server without the credentials its base URL may carry."""

from __future__ import annotations

import pytest

from biblioteca.embeddings import EmbeddingError, OpenAIEmbedder
from tests.conftest import free_port


def test_an_unreachable_server_is_named_without_its_credentials():
    port = free_port()
    embedder = OpenAIEmbedder(
        model="m",
        base_url=f"http://bob:pw-3e4f5a6b@127.0.0.1:{port}/v1?key=k-9z8y7x",
        api_key="",
        dimensions=4,
        batch_size=8,
        timeout=1.0,
        max_retries=0,
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_query("hello")
    message = str(caught.value)
    assert f"127.0.0.1:{port}/v1" in message
    for secret in ("bob", "pw-3e4f5a6b", "k-9z8y7x"):
        assert secret not in message
