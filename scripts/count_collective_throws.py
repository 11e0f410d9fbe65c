#!/usr/bin/env python3
"""Count spmd::Error constructions that pass a second argument (the old `Error(what, true)`).

    scripts/count_collective_throws.py [DIR ...]    (default: include src apps)

Issue 30 made the collective claim a matter of type: `Error(what)` is local; only Comm::check /
impl::agree and `Error::replicated(what)` make `collective() == true`, and `Error(what, bool)`
no longer compiles. This prints every `Error(..., x)` call with two or more arguments (parsed
with balanced brackets and string literals, so calls spread over lines are found) and their
count; 0 is the target. Exit status 1 when any is found.
"""
import pathlib
import re
import sys

CALL = re.compile(r"(?<![A-Za-z0-9_])Error\s*\(")


def calls(text):
    for m in CALL.finditer(text):
        i, depth, args, cur = m.end(), 1, [], ""
        while i < len(text) and depth:
            c = text[i]
            if c in "\"'":
                j = i + 1
                while j < len(text) and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                cur += text[i:j + 1]
                i = j + 1
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if not depth:
                    break
            if c == "," and depth == 1:
                args.append(cur)
                cur = ""
            else:
                cur += c
            i += 1
        args.append(cur)
        yield m.start(), [a.strip() for a in args]


def main():
    roots = sys.argv[1:] or ["include", "src", "apps"]
    found = 0
    for root in roots:
        for path in sorted(pathlib.Path(root).rglob("*")):
            if path.suffix not in (".hpp", ".cpp", ".h") or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            # comments out (a comment's "Error (" is no call); literals stay for the parser
            text = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
            for pos, args in calls(text):
                if len(args) >= 2 and args[0] and "Collective" not in args[-1]:
                    found += 1
                    print(f"{path}:{text.count(chr(10), 0, pos) + 1}: Error(..., {args[-1]})")
    print(f"{found} Error(what, flag) construction(s) in {', '.join(roots)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
