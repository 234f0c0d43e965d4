"""The evaluation in the admin: the form that queues a run from the question log, and the run pages."""
