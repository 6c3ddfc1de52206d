"""`stimkit report`: a self-contained HTML report, publication figures and tables, from the store alone.

data: what to show, read from the store; figures: matplotlib; build: files and the HTML page."""

from .build import FORMATS, Written, write_report
from .data import NothingToReport, ReportData, gather

__all__ = ["FORMATS", "NothingToReport", "ReportData", "Written", "gather", "write_report"]
