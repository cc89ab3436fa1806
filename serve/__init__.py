"""Serving a class past one process: replicas of the app behind HAProxy (`python -m serve`, README)."""
