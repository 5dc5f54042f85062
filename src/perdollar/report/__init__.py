"""report stage: the self-contained HTML report, the performance checklist and what changed since.

>>> from perdollar.report import write_report
>>> write_report(recommendation, "report.html")
"""

from perdollar.report.changes import Reevaluation
from perdollar.report.changes import compare as compare_recommendations
from perdollar.report.checklist import CheckItem
from perdollar.report.html import render_report, write_report

__all__ = ["CheckItem", "Reevaluation", "compare_recommendations", "render_report", "write_report"]
