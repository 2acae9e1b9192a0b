"""Markdown to HTML pages with Python-Markdown (a real producer), for the HTML reading tests.

stdin: {"texts": ["# Title\n\nmarkdown...", ...]}
stdout: {"pages": ["<!doctype html>...", ...]}
Each page wraps the converted body in site chrome (head, style, nav, script, footer) that the
reader must drop, with the content in <main>.
"""
import json
import sys

import markdown


def page(body):
    return (
        "<!doctype html><html><head><title>t</title><style>body{margin:0}</style></head>"
        "<body><nav><a href='/'>Home</a> | <a href='/docs'>Docs</a></nav>"
        "<main>" + body + "</main>"
        "<script>console.log('chrome')</script><footer>(c) Northwind</footer></body></html>"
    )


def main():
    req = json.load(sys.stdin)
    pages = [page(markdown.markdown(t, extensions=["tables", "fenced_code"])) for t in req["texts"]]
    json.dump({"pages": pages}, sys.stdout)


if __name__ == "__main__":
    main()
