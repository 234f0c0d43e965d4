"""Questions and answers; filled by the Oráculo issue."""
