"""The auditor: certified epsilon lower bounds from black-box samples."""

from .accuracy import AccuracyResult, check_accuracies, check_accuracy, holm_adjust, sample_errors
from .audit import audit
from .curve import CurveAuditResult, CurvePoint, audit_curve
from .pairs import PairSearchResult, dataset_pairs, search_pairs, statdp_query_pairs
from .result import AuditResult
from .sampling import Backend, ProcessBackend, SerialBackend
from .dask_backend import DaskBackend, resolve_scheduler
from .scores import OneRunResult, ScoreAuditResult, audit_one_run, audit_scores
from .witness_search.family_learned import preload_boosting

__all__ = ["audit_scores", "ScoreAuditResult", "audit_one_run", "OneRunResult", "audit", "audit_curve", "CurveAuditResult", "CurvePoint", "AuditResult", "check_accuracy", "check_accuracies", "AccuracyResult", "holm_adjust", "sample_errors", "search_pairs", "PairSearchResult", "statdp_query_pairs", "dataset_pairs", "Backend", "SerialBackend", "ProcessBackend", "DaskBackend", "resolve_scheduler", "preload_boosting"]
