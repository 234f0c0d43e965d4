"""The admin's evaluation form: the parameters a run is queued with, validated by `eval_params_build` like every
other door's."""

from __future__ import annotations

from django import forms
from django.conf import settings

from biblioteca.search import MAX_TOP_K
from oraculo.evaluation.params import (
    DEFAULT_TOP_K,
    MAX_TRIM_WINDOW,
    VARIANTS,
    EvalParamsError,
    eval_params_build,
)
from oraculo.evaluation.services import QuestionSource

MAX_QUESTIONS_FILE_BYTES = 2 * 1024 * 1024


class EvalForm(forms.Form):
    top_k = forms.IntegerField(min_value=1, max_value=MAX_TOP_K, initial=DEFAULT_TOP_K)
    trim_threshold = forms.FloatField(
        min_value=-1, max_value=1, help_text="Default: RETRIEVAL_TRIM_THRESHOLD."
    )
    trim_window = forms.IntegerField(
        min_value=0, max_value=MAX_TRIM_WINDOW, help_text="Default: RETRIEVAL_TRIM_WINDOW."
    )
    variants = forms.MultipleChoiceField(
        choices=[(v, v) for v in VARIANTS], initial=list(VARIANTS), widget=forms.CheckboxSelectMultiple
    )
    synthesize = forms.BooleanField(
        required=False, help_text="Also answer with the LLM for each variant (slower)."
    )
    app = forms.CharField(required=False, help_text="Search only this app's documents.")
    source_type = forms.CharField(required=False, help_text="Search only this source type.")
    sweep_thresholds = forms.CharField(
        required=False,
        label="Sweep thresholds",
        help_text="Calibration sweep: start:stop:step or a,b,c, e.g. 0.70:0.90:0.02.",
    )
    sweep_windows = forms.CharField(required=False, label="Sweep windows", help_text="e.g. 0,1,2.")
    sweep_drop_margins = forms.CharField(
        required=False,
        label="Sweep drop margins",
        help_text="e.g. 0.02,0.03,0.04. Left empty, the configured drop margin.",
    )
    min_retention = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        label="Min retention %",
        help_text="Sweep floor for labelled questions (default 99).",
    )
    min_overlap = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        label="Min overlap %",
        help_text="Sweep floor on chunk overlap (default 95 without labels).",
    )
    questions_file = forms.FileField(
        required=False,
        help_text="Optional: a gold set instead of the questions "
        "above (plain text or JSONL with expected_answer).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trim_threshold"].initial = settings.RETRIEVAL_TRIM_THRESHOLD
        self.fields["trim_window"].initial = settings.RETRIEVAL_TRIM_WINDOW

    def clean_questions_file(self) -> QuestionSource | None:
        """The upload as a question source (its text; the service parses it)."""
        upload = self.cleaned_data.get("questions_file")
        if not upload:
            return None
        if upload.size > MAX_QUESTIONS_FILE_BYTES:
            raise forms.ValidationError(f"At most {MAX_QUESTIONS_FILE_BYTES // 1024 // 1024} MB.")
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError(f"{upload.name}: not UTF-8 text.") from exc
        return QuestionSource(text=text, name=upload.name)

    def clean(self):
        data = super().clean()
        sweep = [
            f"{axis}={''.join(data[key].split())}"
            for axis, key in (
                ("threshold", "sweep_thresholds"),
                ("window", "sweep_windows"),
                ("drop_margin", "sweep_drop_margins"),
            )
            if data.get(key)
        ]
        try:
            data["params"] = eval_params_build(
                variants=data.get("variants"),
                top_k=data.get("top_k"),
                trim_threshold=data.get("trim_threshold"),
                trim_window=data.get("trim_window"),
                synthesize=data.get("synthesize", False),
                app=data.get("app"),
                source_type=data.get("source_type"),
                sweep=sweep or None,
                min_retention=data.get("min_retention"),
                min_overlap=data.get("min_overlap"),
            )
        except EvalParamsError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data
