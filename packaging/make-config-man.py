#!/usr/bin/env python3
"""natsfleet.toml(5) from docs/reference/config.md: the same text as a man page.

  make-config-man.py CONFIG_MD VERSION OUTPUT.5.gz

Reads the subset of Markdown the reference uses: headings, paragraphs, tables, fenced code,
lists, `code`, **bold** and [links](target) (the text is kept, the target dropped).
"""
import gzip
import re
import sys


def inline(text):
    """Markdown inline markup to roff, escaping what roff would read as its own."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append("\\fB" + part[1:-1].replace("-", "\\-") + "\\fR")
        else:
            out.append(re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", part))
    return "".join(out)


def line_start(text):
    """A line starting with . or ' would be a roff request."""
    return "\\&" + text if text[:1] in (".", "'") else text


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split(" | ")]


def convert(markdown, version):
    lines = markdown.splitlines()
    out = [
        '.TH NATSFLEET.TOML 5 "" "natsfleet %s" "natsfleet manual"' % version,
        ".SH NAME",
        "natsfleet.toml \\- the config file of natsfleet run, lint, audit and dead\\-letters",
    ]
    i = 0
    paragraph = []
    header = None

    def flush():
        if paragraph:
            out.append(".PP")
            out.append(line_start(inline(" ".join(paragraph))))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(line_start(lines[i].replace("\\", "\\e").replace("-", "\\-")))
                i += 1
            out += [".fi", ".RE"]
        elif line.startswith("# "):
            flush()
            out.append(".SH DESCRIPTION")
        elif line.startswith("## "):
            flush()
            out.append(".SH " + inline(line[3:]).upper())
        elif line.startswith("### "):
            flush()
            out.append(".SS " + inline(line[4:]))
        elif line.startswith("|"):
            flush()
            row = cells(line)
            if header is None:
                header = row
            elif not set(line.replace("|", "").strip()) <= set("- "):
                out.append(".TP")
                out.append(line_start(inline(row[0])))
                rest = ["%s: %s" % (h, c) for h, c in zip(header[1:-1], row[1:-1]) if c]
                rest.append(row[-1] if len(row) > 1 else "")
                out.append(line_start(inline("; ".join(r for r in rest if r))))
        elif line.startswith("- "):
            flush()
            out.append(".IP \\(bu 2")
            out.append(line_start(inline(line[2:])))
        elif not line.strip():
            flush()
            header = None
        else:
            paragraph.append(line.strip())
        i += 1
    flush()
    out += [
        ".SH SEE ALSO",
        ".BR natsfleet (1);",
        "the documents under /usr/share/doc/natsfleet/",
    ]
    return "\n".join(out) + "\n"


def main():
    source, version, target = sys.argv[1:4]
    with open(source, encoding="utf-8") as f:
        page = convert(f.read(), version)
    with open(target, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
            z.write(page.encode("utf-8"))


if __name__ == "__main__":
    main()
