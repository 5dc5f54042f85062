"""What every HTML report shares: its style, its tables and figures, and the page around them.

Every user-provided string goes through :func:`escape` before it reaches the page, and figure
JSON inside ``<script>`` has ``<``, ``>`` and ``&`` escaped, so no stored name can close the
script element or inject markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence

from perdollar.report.banner import BANNER_STYLE
from perdollar.report.sorting import SORT_SCRIPT

# How a page says it is a perdollar report, so a later run may replace it without asking.
GENERATOR_MARK = "<meta name='generator' content='perdollar'>"

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:1.5em;
color:#1b1b1b;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.meta{color:#555} .answer{font-size:1.15em;background:#f3f8ee;border-left:4px solid #2ca02c;padding:.6em 1em}
table{border-collapse:collapse;width:100%;font-size:.88em}
th,td{padding:.3em .5em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#fafafa} td.num{text-align:right;white-space:nowrap}
.pass{color:#1a7f37} .warn{color:#9a6700} .fail{color:#cf222e} .unknown{color:#6e7781}
details{margin-top:.8em} .note{color:#555;font-size:.9em} .plot{min-height:260px;width:100%}
.scroll{overflow-x:auto;max-width:100%} th.sortable{cursor:pointer} th.sortable:after{content:" ⇅";color:#aaa}
.pair{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,480px),1fr));gap:1em}
.pair>.plot{min-width:0}
@media (max-width:600px){body{padding:.6em} h1{font-size:1.25em}}
"""


def escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def script_json(value: object) -> str:
    """JSON safe inside a <script> element (cannot close it, cannot start a comment)."""
    text = json.dumps(value, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: set[int] | None = None,
    sortable: bool = False,
    table_id: str = "",
) -> str:
    """A table of cells already escaped (headers are escaped here), in its own scroll box."""
    numeric = numeric or set()
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    css = " class='sortable'" if sortable else ""
    named = f" id='{escape(table_id)}'" if table_id else ""
    # Its own scroll box: a wide table never widens the page on a phone.
    element = f"<table{named}{css}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='scroll'>{element}</div>"


def figure(div_id: str, plotted: Mapping[str, object] | None, empty: str) -> str:
    """A Plotly figure drawn into its own element; ``empty`` says in one line why there is none."""
    if plotted is None:
        return f"<p class='note'>{escape(empty)}</p>"
    config = {"responsive": True, "displaylogo": False}
    return (
        f'<div id="{div_id}" class="plot"></div>\n<script>Plotly.newPlot("{div_id}", '
        f"{script_json(plotted['data'])}, {script_json(plotted['layout'])}, {script_json(config)});</script>"
    )


def fields(items: Sequence[tuple[str, str, str, str]], label: str) -> str:
    """The answer at a glance: (key, label, value markup, css class) as a labelled definition list."""
    cells = "".join(
        f"<div class='{css}' data-field='{key}'><dt>{escape(name)}</dt><dd>{value}</dd></div>"
        for key, name, value, css in items
    )
    return f"<dl class='banner' aria-label='{escape(label)}'>{cells}</dl>"


def plotly_bundle(plotly_js: str | None) -> str:
    """Plotly's JavaScript, embedded so that the page works offline."""
    if plotly_js is not None:
        return plotly_js
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def document(title: str, body: Sequence[str], plotly_js: str) -> str:
    """The whole page: head, style, the embedded plotting library, ``body`` and the sort script."""
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>{GENERATOR_MARK}"
        f"<title>perdollar report: {escape(title)}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
        f"<style>{STYLE}{BANNER_STYLE}</style><script>{plotly_js}</script></head><body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )
