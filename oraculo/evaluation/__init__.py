"""The evaluation of retrieval: the same questions with and without sentence trimming (A/B), or a calibration
sweep of the trimming settings.

- params: what a run is asked to do, validated (`eval_params_build`).
- questions: explicit questions and question files; selectors: the question log and stored runs as reports.
- measures: pure measures (answer in context, overlap, retention, Pareto front); summary: a run's summary.
- harness: one question prepared once and evaluated per variant (`QuestionResult`, `VariantResult`), and the
  inline run (`evaluation_run`); sweep: the calibration sweep over the same preparations.
- export: the JSON (`report_json`) and CSV shapes; render: the terminal tables of the command and the benches.
- services: `evaluation_start` (queue a run), `evaluation_run_inline`, `eval_run_save`; worker: a queued run's
  life on the worker. admin/ and api/ are the doors.
"""
