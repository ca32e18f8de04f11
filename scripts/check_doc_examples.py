#!/usr/bin/env python3
"""Checks that every documentation code block taken from an example file still
matches it.  A doc page names its source in the line before the block:
    <!-- example: examples/skiplist_map_quickstart.cpp -->
and the example marks the shown lines with `// doc-begin` and `// doc-end`; the
block must equal those lines (common indentation removed)."""
import pathlib
import re
import sys
import textwrap

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
pattern = re.compile(r"<!-- example: (\S+) -->\s*```\w*\n(.*?)```", re.S)
problems = 0
checked = 0
for page in sorted((root / "docs").glob("*.md")) + [root / "README.md"]:
    text = page.read_text()
    for match in pattern.finditer(text):
        source = root / match.group(1)
        if not source.exists():
            print(f"{page}: names {match.group(1)}, which does not exist")
            problems += 1
            continue
        body = source.read_text()
        marked = re.search(r"// doc-begin\n(.*?)\n[ \t]*// doc-end", body, re.S)
        if not marked:
            print(f"{source}: no // doc-begin ... // doc-end lines")
            problems += 1
            continue
        shown = textwrap.dedent(match.group(2)).strip("\n")
        wanted = textwrap.dedent(marked.group(1)).strip("\n")
        checked += 1
        if shown != wanted:
            print(f"{page}: the block from {match.group(1)} differs from the file's marked lines")
            problems += 1
print(f"check_doc_examples: {checked} blocks checked, {problems} problems")
sys.exit(1 if problems or checked == 0 else 0)
