"""Retrieval: the graph's retrievers, and the vector and full-text searches they fuse."""
