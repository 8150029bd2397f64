"""Tests of canvas_client (unittest). Run from the repository root:

    python3 -m unittest discover -s clients/python/tests -v
"""
