"""Markdown to PDF (fpdf2), DOCX (python-docx) and HTML (Python-Markdown, whose HTML the other
two are made from), for the document reading tests and the conversion benchmark; and the
reference extraction of each PDF's text per page (pypdf).

stdin:  {"out": "/dir", "docs": [{"name": "guide", "markdown": "# Title\n..."}, ...]}
stdout: {"docs": [{"pdf": "/dir/guide.pdf", "docx": "/dir/guide.docx", "html": "/dir/guide.html",
                   "pdf_pages": ["page 1 text", ...]}, ...]}
"""
import json
import os
import sys
import unicodedata
from html.parser import HTMLParser

import docx
import markdown
from fpdf import FPDF
from pypdf import PdfReader


def latin1(text):
    """The core PDF fonts cover Latin-1 only: spell the rest out or drop it."""
    text = unicodedata.normalize("NFKD", text)
    swaps = {"\u2014": "-", "\u2013": "-", "\u2192": "->", "\u2018": "'", "\u2019": "'",
             "\u201c": '"', "\u201d": '"', "\u2026": "...", "\u2264": "<=", "\u2265": ">="}
    for a, b in swaps.items():
        text = text.replace(a, b)
    return text.encode("latin-1", "ignore").decode("latin-1")


class DocxBuilder(HTMLParser):
    """Python-Markdown's HTML as a Word document: h1-h6 as Heading styles, p, ul/ol items as
    List Bullet / List Number (nested levels as "List Bullet 2"), tables, pre as paragraphs."""

    def __init__(self, document):
        super().__init__()
        self.doc = document
        self.text = []
        self.block = None
        self.lists = []
        self.table = None
        self.row = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6", "p", "pre") and self.row is None:
            self.flush()
            self.block = tag
        elif tag in ("ul", "ol"):
            self.flush()
            self.lists.append(tag)
        elif tag == "li":
            self.flush()
            self.block = "li"
        elif tag == "table":
            self.flush()
            self.table = []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.text = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.row is not None:
            self.row.append(" ".join("".join(self.text).split()))
            self.text = []
        elif tag == "tr" and self.table is not None:
            self.table.append(self.row)
            self.row = None
        elif tag == "table":
            rows = self.table or []
            width = max((len(r) for r in rows), default=0)
            if width:
                t = self.doc.add_table(rows=len(rows), cols=width)
                for i, r in enumerate(rows):
                    for j, cell in enumerate(r):
                        t.cell(i, j).text = cell
            self.table = None
        elif tag in ("ul", "ol"):
            self.flush()
            self.lists.pop()
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6", "p", "pre", "li"):
            self.flush()

    def handle_data(self, data):
        self.text.append(data)

    def flush(self):
        raw = "".join(self.text)
        self.text = []
        block, self.block = self.block, None
        if self.row is not None or not raw.strip():
            return
        if block == "pre":
            self.doc.add_paragraph(raw.rstrip("\n"))
            return
        text = " ".join(raw.split())
        if block and block[0] == "h":
            self.doc.add_heading(text, level=int(block[1]))
        elif block == "li" or (block is None and self.lists):
            kind = "List Number" if self.lists and self.lists[-1] == "ol" else "List Bullet"
            depth = len(self.lists)
            self.doc.add_paragraph(text, style=kind if depth <= 1 else f"{kind} {min(depth, 3)}")
        else:
            self.doc.add_paragraph(text)


def make_pdf(html, path):
    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.write_html(latin1(html))
    pdf.output(path)


def main():
    req = json.load(sys.stdin)
    out = []
    for d in req["docs"]:
        html = markdown.markdown(d["markdown"], extensions=["tables", "fenced_code"])
        base = os.path.join(req["out"], d["name"])
        make_pdf(html, base + ".pdf")
        document = docx.Document()
        builder = DocxBuilder(document)
        builder.feed(html)
        builder.flush()
        document.save(base + ".docx")
        if req.get("html"):
            with open(base + ".html", "w", encoding="utf-8") as f:
                f.write("<!doctype html><html><body><main>" + html + "</main></body></html>")
        pages = [p.extract_text() or "" for p in PdfReader(base + ".pdf").pages]
        out.append({"pdf": base + ".pdf", "docx": base + ".docx", "html": base + ".html",
                    "pdf_pages": pages})
    json.dump({"docs": out}, sys.stdout)


if __name__ == "__main__":
    main()
