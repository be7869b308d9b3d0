#!/usr/bin/env python3
"""Writes every C++ example of the public headers and the docs as a translation unit to compile.

  extract_examples.py OUT_DIR FILE...

A header's example is a run of comment lines indented three spaces ("//   code") that follows an
empty comment line; one whose first line starts with "$ " is a shell command and is skipped. A
Markdown example is a ```cpp fenced block. Each becomes OUT_DIR/<file>_<n>.cc, which includes
prelude.h (the names examples leave to the reader), then the example's #include lines, then the
example: as written when it defines a function, as a handler's body when it returns from one
(`m` is the message), else as a function's body. "..." lines stand for code left out. Prints the
written files' names, one a line; fails when a file holds a block it cannot read.
"""
import pathlib
import re
import sys

HEADER_CODE = re.compile(r"^\s*//   (.*)$")
HEADER_BLANK = re.compile(r"^\s*//\s*$")
FENCE_OPEN = re.compile(r"^```(cpp|c\+\+)\s*$")
FUNCTION_START = re.compile(
    r"^(?!(return|if|for|while|switch|else|do|auto)\b)[A-Za-z_][\w:<>,&* ]*\s[\w:~]+\([^;]*\)\s*(const\s*)?\{\s*$")


def header_examples(lines):
    """(line number, code lines) of each example in a header's comments."""
    examples, i = [], 0
    while i < len(lines):
        if HEADER_CODE.match(lines[i]) and i > 0 and HEADER_BLANK.match(lines[i - 1]):
            start, code = i + 1, []
            while i < len(lines) and HEADER_CODE.match(lines[i]):
                code.append(HEADER_CODE.match(lines[i]).group(1))
                i += 1
            if not code[0].startswith("$ "):
                examples.append((start, code))
        else:
            i += 1
    return examples


def markdown_examples(lines, path):
    examples, i = [], 0
    while i < len(lines):
        if FENCE_OPEN.match(lines[i]):
            start, code = i + 2, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            if i == len(lines):
                sys.exit(f"{path}:{start - 1}: a ```cpp block that never closes")
            examples.append((start, code))
        i += 1
    return examples


def translation_unit(source, line, code):
    includes = [c for c in code if c.lstrip().startswith("#include")]
    body = ["// ..." if c.strip() == "..." else c for c in code if c not in includes]
    top = [c for c in body if c and not c[0].isspace()]
    head = ["// From " + source + ":" + str(line) + " (tests/examples/extract_examples.py).",
            '#include "prelude.h"'] + includes
    if any(FUNCTION_START.match(c) for c in top):
        return head + [f'#line {line} "{source}"'] + body
    if any(c.startswith("return ") for c in top):
        opening = "natsfleet::Disposition example([[maybe_unused]] const natsfleet::Message& m) {"
    else:
        opening = "void example() {"
    return head + [opening, f'#line {line} "{source}"'] + body + ["}"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    root = pathlib.Path(__file__).resolve().parents[2]
    written = []
    for name in sys.argv[2:]:
        path = pathlib.Path(name).resolve()
        source = str(path.relative_to(root))
        lines = path.read_text().splitlines()
        found = (markdown_examples(lines, source) if path.suffix == ".md"
                 else header_examples(lines))
        stem = re.sub(r"[^\w]", "_", source)
        for n, (line, code) in enumerate(found, 1):
            unit = out / f"{stem}_{n}.cc"
            text = "\n".join(translation_unit(source, line, code)) + "\n"
            if not unit.exists() or unit.read_text() != text:
                unit.write_text(text)
            written.append(unit.name)
    for stale in out.glob("*.cc"):
        if stale.name not in written:
            stale.unlink()
    print("\n".join(written))


if __name__ == "__main__":
    main()
