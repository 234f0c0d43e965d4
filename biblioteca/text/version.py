"""The version of what the text pipeline makes of a markdown file: its title, chunks and sentence units.

Each document is stored with the version that processed it. One processed under another version is processed
again at its next ingest, even with its content unchanged, so that better chunking and splitting reach the
libraries already stored (their unchanged texts keep their vectors: nothing is embedded twice). Bump it in the
change that alters the output for some input: tests/biblioteca/test_text_version.py fails until you do.
"""

TEXT_VERSION = 2
