"""Real files nobody here wrote, converted by dashrag's converters and by markitdown, side by side in one run
(issue 35): crashes, pages per second (PDF), files per second (HTML) and peak memory.

The files: the PDFs of two Debian documentation packages (``texlive-latex-recommended-doc``,
``texlive-pictures-doc``: LaTeX package manuals, fetched with ``apt-get download`` and unpacked with
``dpkg-deb -x`` into ``--pdfs``), the first ``--max-pdfs`` in path order under ``--max-mb`` MiB each, and
every HTML page under ``/usr/share/doc`` (Debian's own manuals: libxslt, nodejs, valgrind, ...). Each side
runs in its own process (markitdown in its own venv, ``--markitdown-python``: its dependencies are not
dashrag's), converting every file in turn; a *crash* is an exception other than the converter's own
"cannot be read" answer (dashrag's ``ConversionFailed``, reported per file). Peak memory is the side's
``ru_maxrss``. dashrag converts in process here (the converters themselves; a folder read adds the worker
process around them). Pages come from PDFium's page count, the same for both sides.

    .venv/bin/python bench/bench_documents_real_files.py --pdfs /tmp/w35-real/x --markitdown-python \\
        /tmp/w35-markitdown/bin/python [--max-pdfs 220] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def convert_all(side: str, files: list[str]) -> dict:
    """The runner: convert ``files`` with ``side``'s converters; per format: seconds, failures, crashes."""
    if side == "dashrag":
        from dashrag.documents.converters import ConversionFailed, ReadLimits, converter_for

        limits = ReadLimits(timeout_s=600)

        def convert(path: Path) -> int:
            kind = converter_for(path)
            assert kind is not None
            try:
                return len(kind.convert(path, limits).text)
            except ConversionFailed:
                return -1
    else:
        from markitdown import MarkItDown

        converter = MarkItDown(enable_plugins=False)

        def convert(path: Path) -> int:
            return len(converter.convert(str(path)).text_content or "")

    out: dict = {}
    for name in files:
        path = Path(name)
        kind = path.suffix.lower().lstrip(".")
        figures = out.setdefault(kind, {"files": 0, "seconds": 0.0, "failed": 0, "crashes": [], "chars": 0})
        started = time.perf_counter()
        try:
            chars = convert(path)
            figures["failed" if chars < 0 else "chars"] += 1 if chars < 0 else chars
        except Exception as exc:
            figures["crashes"].append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        figures["seconds"] += time.perf_counter() - started
        figures["files"] += 1
    return {"per_format": out, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def pdf_pages(files: list[Path]) -> int:
    import pypdfium2 as pdfium

    total = 0
    for path in files:
        pdf = pdfium.PdfDocument(str(path))
        total += len(pdf)
        pdf.close()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=["dashrag", "markitdown"], help=argparse.SUPPRESS)
    parser.add_argument("--list", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pdfs", type=Path)
    parser.add_argument("--html", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--max-pdfs", type=int, default=220)
    parser.add_argument("--max-mb", type=float, default=3.0)
    parser.add_argument("--markitdown-python", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.side:
        files = json.loads(args.list.read_text(encoding="utf-8"))
        print(json.dumps(convert_all(args.side, files)))
        return
    pdfs = [p for p in sorted(args.pdfs.rglob("*.pdf")) if p.stat().st_size <= args.max_mb * 2**20][: args.max_pdfs]
    pages = [p for p in sorted(args.html.rglob("*.html")) if p.is_file()]
    files = [str(p) for p in pdfs + pages]
    listing = Path(args.json or "/tmp/bench_documents_real_files").with_suffix(".files.json")
    listing.write_text(json.dumps(files), encoding="utf-8")
    figures: dict = {"pdf_files": len(pdfs), "pdf_pages": pdf_pages(pdfs), "html_files": len(pages),
                     "load_average_before": os.getloadavg(), "sides": {}}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for side, python in (("dashrag", Path(sys.executable)), ("markitdown", args.markitdown_python)):
        done = subprocess.run([str(python), __file__, "--side", side, "--list", str(listing)], env=env,
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        pdf = result["per_format"].get("pdf", {})
        result["pdf_pages_per_s"] = round(figures["pdf_pages"] / pdf["seconds"], 1) if pdf else None
        html = result["per_format"].get("html", {})
        result["html_files_per_s"] = round(html["files"] / html["seconds"], 1) if html else None
        figures["sides"][side] = result
        print(side, json.dumps({k: v for k, v in result.items() if k != "per_format"}), flush=True)
    figures["load_average_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
