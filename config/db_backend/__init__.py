"""A PostgreSQL backend that starts the embedded server on first connection.

Used when `DATABASE_URL` is unset. Starting the server lazily, on connection rather than at settings
import, keeps `manage.py check`, imports and the health endpoint free of side effects, and lets a
process reconnect after the server was restarted underneath it.
"""
