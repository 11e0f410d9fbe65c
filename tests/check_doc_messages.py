#!/usr/bin/env python3
"""Every error message the docs quote is one the library prints (issue 30: docs must not drift).

    check_doc_messages.py SOURCE_ROOT

The convention (docs/troubleshooting.md, "spmdarray's own error messages", says it to writers):

* In a fenced code block of docs/**/*.md, a line that starts (after optional indentation) with
  `spmd: ` or a qualified name and a colon, `spmd::Array::set: `, is a message exactly as the
  library prints it, with real values (code such as `spmd::fill(x, 0.0);` is not).
* In a Markdown table whose header's first cell starts with `message`, every backticked span at
  the start of a first cell (and each further span of that cell) is a message template. A cell
  that ends with another program's name in parentheses, `(Kokkos)`, `(CUDA)`, `(HDF5)` or `(MPI)`,
  quotes that program, not ours, and is skipped.

What may vary: `...` and `<name>` (placeholders), `{...}` (a shape as impl::shape_str prints it),
numbers, single letters standing for a number (`P ranks`, `rank r`) and quoted names (`'...'`).
Everything else, cut at those, must occur inside one string literal of include/, src/, apps/,
cmake/ or the top CMakeLists.txt (C++, Python and CMake sources; a literal is cut at printf
conversions and ${...}). A
qualified name such as `spmd::Array::set` is a piece of its own, since the library often passes
it as a variable.

Exit 0 when every piece is found; 1 with the message, the piece and the doc's line otherwise. Run
with --self-test to see it reject the old forms the docs once quoted.
"""
import pathlib
import re
import sys

SOURCE_DIRS = ("include", "src", "apps", "cmake")
SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".py", ".cmake", ".in", ".txt"}
EXTERNAL = re.compile(r"\((Kokkos|CUDA|HDF5|MPI)\)\s*$")
# What a message may carry that the code fills in: a placeholder, a shape, a quoted name, a number.
VARIABLE = re.compile(
    r"<[^<>`]*>"  # <function>, <MPI's text>
    r"|\{[^{}]*\}"  # {99, 0}, {...}
    r"|'[^']*'"  # 'name'
    r"|\"[^\"]*\""  # "label"
    r"|\w+\[[^\]]*\]"  # a[0:7, 0:8] (an operand as it describes itself)
    r"|\[[-0-9:, ]*\)"  # [32:64, 0:5) (a Box as its operator<< prints it)
    r"|\.\.\."  # ...
    r"|(?<!\w)-?\d+(?:\.\d+)?\b"  # 70, -2, 1.5
    r"|\b[A-Za-z]\b"  # P ranks, rank r, version N
)
QUALIFIED = re.compile(r"(spmd(?:::\w+)+)")  # a piece of its own (kept by split)
LITERAL_SPLIT = re.compile(r"%[-+ #0-9.*]*[a-zA-Z]{1,3}|\$\{[^}]*\}|\{\}")


TOKENS = {
    # string literals and comments (a comment's quotes are no literal); char literals skipped
    "c++": re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)+\'|//[^\n]*|/\*.*?\*/', re.S),
    "python": re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*'),
    "cmake": re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*', re.S),
}
# A literal the code follows with a shape prints that shape's bracket right after it.
SHAPE_AFTER = re.compile(r"\s*[,+]\s*(?:impl::)?(np_)?shape_str\(")


def language(path):
    if path.suffix in (".hpp", ".cpp", ".h"):
        return "c++"
    if path.suffix == ".py":
        return "python"
    if path.suffix in (".cmake", ".in") or path.name == "CMakeLists.txt":
        return "cmake"
    return None


def source_pieces(root):
    """The string literals of the sources, cut where a value is formatted in; and the set of the
    pieces that end in the bracket of a shape printed right after them (" (" of " " + np_shape_str)."""
    pieces, bracketed = set(), set()
    paths = [p for d in SOURCE_DIRS for p in (root / d).rglob("*")] + [root / "CMakeLists.txt"]
    for path in paths:
        lang = path.is_file() and language(path)
        if not lang:
            continue
        text = path.read_text(errors="replace")
        for m in TOKENS[lang].finditer(text):
            tok = m.group(0)
            if tok[0] not in "\"'" or (lang == "c++" and tok[0] == "'"):
                continue
            lit = tok[1:-1].replace("\\\n", "").replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
            parts = [p for p in LITERAL_SPLIT.split(lit) if p]
            pieces.update(p for p in parts if p.strip())
            shape = SHAPE_AFTER.match(text, m.end())
            if parts and shape:
                bracketed.add(parts[-1] + ("(" if shape.group(1) else "{"))
    return pieces | bracketed, bracketed


def message_pieces(message):
    """The fixed text of a quoted message: the pieces between what the code fills in."""
    out = []
    for chunk in VARIABLE.split(message):
        for part in QUALIFIED.split(chunk):
            part = part.strip()
            if part.startswith(":") and not part.startswith("::"):
                part = part[1:].strip()  # the ": " after a name the code passes as a value
            if sum(c.isalnum() for c in part) >= 2:  # not punctuation alone
                out.append(part)
    return out


def doc_messages(docs):
    """(file, line, message) for each message quoted by the convention above."""
    for path in sorted(docs.rglob("*.md")):
        fenced = False
        table_is_messages = False
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                if re.match(r"\s*spmd(?:::\w+)*: ", line):
                    yield path, n, line.strip()
                continue
            if not line.startswith("|"):
                table_is_messages = False
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not cells:
                continue
            if re.match(r"message\b", cells[0]):
                table_is_messages = True
                continue
            if not table_is_messages or not cells[0].startswith("`") or EXTERNAL.search(cells[0]):
                continue
            # only the spans before any prose in parentheses: "(also `local_index`)" names variants
            spans_part = re.split(r"\(also\b", cells[0])[0]
            for span in re.findall(r"`([^`]+)`", spans_part):
                yield path, n, span


def found(piece, pieces, bracketed):
    """piece is inside one literal, or is a literal's end, whole literals and a literal's start
    (str("is truncated: ", "it has ", n) prints "is truncated: it has"). Each part of such a
    concatenation must hold two letters or digits, so that a stray "(" literal cannot complete a
    piece such as "ranks matches (" that no literal holds; the one exception is a whole bracketed
    piece (" (" of `shapes += " " + np_shape_str(...)`)."""
    if any(piece in p for p in pieces):
        return True

    def words(part):
        return sum(c.isalnum() for c in part) >= 2

    def rest(r):
        if r in bracketed or (words(r) and any(p.startswith(r) for p in pieces)):
            return True
        return any(r.startswith(p) and len(p) < len(r) and words(p) and rest(r[len(p):]) for p in pieces)

    return any(words(piece[:k]) and any(p.endswith(piece[:k]) for p in pieces) and rest(piece[k:])
               for k in range(1, len(piece)))


def check(root, messages, sources):
    bad = []
    for path, n, message in messages:
        for piece in message_pieces(message):
            if not found(piece, *sources):
                bad.append(f"{path.relative_to(root)}:{n}: '{piece}' (of: {message}) is in no string literal of "
                           + ", ".join(SOURCE_DIRS) + ", CMakeLists.txt")
    return bad


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    if len(args) != 1:
        sys.exit(__doc__)
    root = pathlib.Path(args[0]).resolve()
    sources = source_pieces(root)
    if not sources[0]:
        sys.exit(f"no string literals found under {root}: wrong SOURCE_ROOT?")
    # The checker must be able to fail: the forms the docs once printed are rejected.
    stale = ["spmd: rank 1: uncaught exception: spmd::Array::set: global index (70) is out of range for shape (64)",
             "spmd::Distribution: no process grid of P ranks matches (...)",
             "spmd::no_such_function: a message nobody prints"]
    for s in stale:
        if not check(root, [(root / "self-test", 0, s)], sources):
            sys.exit(f"self-test: the stale message '{s}' was accepted")
    messages = list(doc_messages(root / "docs"))
    if "--self-test" in sys.argv:
        print(f"self-test passed ({len(stale)} stale forms rejected)")
    bad = check(root, messages, sources)
    for b in bad:
        print(b)
    print(f"{len(messages)} quoted messages in docs/, {len(bad)} pieces found in no string literal")
    sys.exit(1 if bad or not messages else 0)


if __name__ == "__main__":
    main()
