"""The versions of what the text pipeline makes of a markdown file: its title, chunks and sentence units
(`TEXT_VERSION`), and each sentence's stems and identifier keys (`TERMS_VERSION`: `lexical.unit_terms`,
`identifiers.identifier_keys`).

Each document is stored with the versions that processed it. One processed under others is processed again at
its next ingest, even with its content unchanged, so that better chunking, splitting and stemming reach the
libraries already stored (their unchanged texts keep their vectors: nothing is embedded twice); until then its
stored stems and keys are not used. Bump a version in the change that alters its output for some input (a new stemmer
release can too): tests/biblioteca/test_text_version.py fails until you do.
"""

TEXT_VERSION = 2
TERMS_VERSION = 2
