"""Measuring answer quality: golden sets, metrics, evaluation runs and their reports."""
