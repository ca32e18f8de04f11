#!/usr/bin/env python3
"""Checks that every documentation code block taken from a source file still
matches it, and that no C, C++ or Python block in the docs is left unchecked.

A doc page names the source in the line before the block:
    <!-- example: examples/hash_map_quickstart.cpp -->
    <!-- example: examples/hash_map_visitor.cpp#errors -->
and the source marks the shown lines with `// doc-begin` and `// doc-end` (or,
for a named region, `// doc-begin errors` and `// doc-end errors`; `#` instead of
`//` in Python); the block must equal those lines (common indentation removed).
A code block that is deliberately not a real program (a signature, a pattern)
says so in the line before it: <!-- not an example: why -->.

    scripts/check_doc_examples.py [ROOT] [--fix]

--fix rewrites each differing example block from its source's marked lines
(the source is the truth; review the diff)."""
import pathlib
import re
import sys
import textwrap

arguments = [a for a in sys.argv[1:] if a != "--fix"]
fix = "--fix" in sys.argv[1:]
root = pathlib.Path(arguments[0] if arguments else ".")
block = re.compile(r"(?:<!-- (example|not an example): ?([^>]*?) -->\s*\n)?```(\w*)\n(.*?)```", re.S)
checked_languages = {"c", "cpp", "c++", "python"}
problems = 0
checked = 0


def marked_lines(body, region):
    name = re.escape(region)
    suffix = rf"[ \t]+{name}" if region else ""
    found = re.search(rf"(?://|#)[ \t]*doc-begin{suffix}[ \t]*\n(.*?)\n[ \t]*(?://|#)[ \t]*doc-end{suffix}[ \t]*(?:\n|$)",
                      body, re.S)
    return found.group(1) if found else None


for page in sorted((root / "docs").glob("*.md")) + [root / "README.md"]:
    text = page.read_text()
    fixed = []  # (start, end, replacement) of the blocks --fix rewrites
    for match in block.finditer(text):
        kind, target, language, shown = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        if kind is None:
            if language in checked_languages:
                print(f"{page}:{line}: a {language} block with no <!-- example: FILE --> (or <!-- not an example: why -->)")
                problems += 1
            continue
        if kind == "not an example":
            if not target.strip():
                print(f"{page}:{line}: <!-- not an example --> must say why")
                problems += 1
            continue
        path, _, region = target.partition("#")
        source = root / path
        if not source.exists():
            print(f"{page}:{line}: names {path}, which does not exist")
            problems += 1
            continue
        wanted = marked_lines(source.read_text(), region)
        if wanted is None:
            print(f"{source}: no doc-begin{' ' + region if region else ''} ... doc-end lines")
            problems += 1
            continue
        checked += 1
        if textwrap.dedent(shown).strip("\n") != textwrap.dedent(wanted).strip("\n"):
            if fix:
                fixed.append((match.start(4), match.end(4), textwrap.dedent(wanted).strip("\n") + "\n"))
                print(f"{page}:{line}: rewrote the block from {target}")
            else:
                print(f"{page}:{line}: the block from {target} differs from the file's marked lines")
                problems += 1
    for start, end, replacement in reversed(fixed):
        text = text[:start] + replacement + text[end:]
    if fixed:
        page.write_text(text)
print(f"check_doc_examples: {checked} blocks checked, {problems} problems")
sys.exit(1 if problems or checked == 0 else 0)
