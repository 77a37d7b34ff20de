"""Trace events: their kinds, the emitter that stores them, the stream, and their text."""
