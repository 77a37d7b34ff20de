"""The HTML report: one self-contained page (inline SVG plots, no scripts, no network)."""

from __future__ import annotations

from html import escape

from ragapp.evaluation.report import fmt, headline

WIDTH, HEIGHT, PAD = 420, 200, 30


def histogram(series: dict[str, list[float]], *, title: str, lo: float, hi: float, bins: int = 20):
    """An SVG histogram of one or more series over [lo, hi], overlaid, with a legend."""
    colours = ["#2563eb", "#ea580c", "#16a34a"]
    span = (hi - lo) or 1.0
    counts = {}
    for name, values in series.items():
        row = [0] * bins
        for v in values:
            row[min(bins - 1, max(0, int((v - lo) / span * bins)))] += 1
        counts[name] = row
    top = max([max(row) for row in counts.values()] + [1])
    bar_w = (WIDTH - 2 * PAD) / bins
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT + 40}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{PAD}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{PAD}" y1="{HEIGHT}" x2="{WIDTH - PAD}" y2="{HEIGHT}" stroke="#999"/>',
    ]
    for index, (name, row) in enumerate(counts.items()):
        colour = colours[index % len(colours)]
        for b, count in enumerate(row):
            if count:
                h = (HEIGHT - 40) * count / top
                parts.append(
                    f'<rect x="{PAD + b * bar_w:.1f}" y="{HEIGHT - h:.1f}" width="{bar_w - 1:.1f}" '
                    f'height="{h:.1f}" fill="{colour}" fill-opacity="0.55">'
                    f"<title>{escape(name)}: {count}</title></rect>"
                )
        parts.append(
            f'<text x="{WIDTH - PAD}" y="{34 + 14 * index}" font-size="11" text-anchor="end" '
            f'fill="{colour}">{escape(name)} ({sum(row)})</text>'
        )
    parts.append(f'<text x="{PAD}" y="{HEIGHT + 16}" font-size="11">{fmt(lo)}</text>')
    parts.append(
        f'<text x="{WIDTH - PAD}" y="{HEIGHT + 16}" font-size="11" text-anchor="end">'
        f"{fmt(hi)}</text>"
    )
    parts.append(f'<text x="{PAD}" y="{HEIGHT + 32}" font-size="10">max {top}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _plots(report: dict) -> list[str]:
    items = report["items"]
    plots = []
    if report["mode"] == "full":
        seconds = [i["total_ms"] / 1000 for i in items if i["total_ms"] is not None]
        if seconds:
            hi = max(seconds) * 1.05 or 1.0
            plots.append(histogram({"runs": seconds}, title="Run latency (s)", lo=0, hi=hi))
        grading = report.get("grading", {})
        plots.append(
            histogram(
                {
                    "chunks from expected sources": grading.get("relevance_expected", []),
                    "other chunks": grading.get("relevance_other", []),
                },
                title="Relevance scores",
                lo=0,
                hi=1,
            )
        )
        plots.append(
            histogram(
                {"answers": report.get("faithfulness", {}).get("scores", [])},
                title="Faithfulness scores",
                lo=0,
                hi=1,
            )
        )
    else:
        ms = [i["retrieval_ms"] for i in items]
        plots.append(histogram({"questions": ms}, title="Retrieval latency (ms)", lo=0, hi=max(ms)))
    rr = [i["reciprocal_rank"] for i in items if i["answerable"]]
    plots.append(histogram({"questions": rr}, title="Reciprocal rank", lo=0, hi=1, bins=10))
    return plots


def _row(item: dict, full: bool) -> str:
    cells = [
        escape(item["id"]),
        escape(item["question"]),
        "yes" if item["answerable"] else "no",
        escape(", ".join(item["sources"])) or "-",
        fmt(item["recall_at_k"]) if item["answerable"] else "-",
        fmt(item["reciprocal_rank"]) if item["answerable"] else "-",
    ]
    if full:
        missing = [f for f, ok in item["facts"].items() if not ok]
        cells += [
            escape(item["status"]),
            "-"
            if item["facts_ok"] is None
            else ("ok" if item["facts_ok"] else "missing: ") + escape(", ".join(missing)),
            fmt(item["faithfulness_score"]),
            fmt(item["total_ms"] / 1000 if item["total_ms"] is not None else None),
        ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def render_html(report: dict) -> str:
    """The whole report page."""
    full = report["mode"] == "full"
    head = ["id", "question", "answerable", "sources", f"recall@{report['k']}", "RR"]
    if full:
        head += ["status", "facts", "faithfulness", "seconds"]
    settings_rows = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
        for k, v in report.get("settings", {}).items()
    )
    metric_rows = "".join(
        f"<tr><th>{escape(label)}</th><td>{escape(fmt(value))}</td></tr>"
        for label, value in headline(report)
    )
    rows = "".join(_row(item, full) for item in report["items"])
    title = f"Evaluation {report.get('name', '')}: {report.get('golden', '')}"
    created = report.get("created_at", "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2rem; color: #111; }}
table {{ border-collapse: collapse; margin-bottom: 1.5rem; }}
th, td {{ border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 1rem; }}
</style></head><body>
<h1>{escape(title)}</h1>
<p>{escape(report["mode"])} evaluation of {report["questions"]} questions
({report["answerable"]} answerable, {report["unanswerable"]} not), {escape(created)}.</p>
<h2>Metrics</h2><table>{metric_rows}</table>
<h2>Distributions</h2><div class="plots">{"".join(_plots(report))}</div>
<h2>Settings</h2><table>{settings_rows}</table>
<h2>Questions</h2>
<table><thead><tr>{"".join(f"<th>{escape(h)}</th>" for h in head)}</tr></thead>
<tbody>{rows}</tbody></table>
</body></html>
"""
