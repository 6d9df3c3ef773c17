"""Ten copies of a tree whose content differs: copy i has its ASCII letters
rotated by i (the statistics of real code, no hard links, no byte-identical
files), so an index reads and holds ten times the bytes.

    python3 benches/tenfold.py SOURCE TARGET            # the whole tree
    python3 benches/tenfold.py SOURCE TARGET CHANGES    # only these paths

CHANGES is `git diff --no-renames --name-status -z` output between the tree
TARGET was made from and SOURCE: each path is written again, or removed
from every copy (deleted, or no longer a regular file).
"""
import os
import string
import sys


def rotation(copy):
    lower, upper = string.ascii_lowercase, string.ascii_uppercase
    return bytes.maketrans(
        (lower + upper).encode(),
        (lower[copy:] + lower[:copy] + upper[copy:] + upper[:copy]).encode(),
    )


def every_file(source):
    for folder, dirs, files in os.walk(source):
        dirs[:] = [name for name in dirs if name != ".git"]
        for name in files:
            yield os.path.relpath(os.path.join(folder, name), source)


def changed_files(changes):
    with open(changes, "rb") as file:
        fields = file.read().split(b"\0")
    return [name.decode() for name in fields[1::2]]


def main(source, target, changes=None):
    names = changed_files(changes) if changes else list(every_file(source))
    for copy in range(10):
        rotate = rotation(copy)
        for name in names:
            path = os.path.join(source, name)
            out = os.path.join(target, f"copy-{copy}", name)
            if os.path.islink(path) or not os.path.isfile(path):
                if changes and os.path.lexists(out) and not os.path.isdir(out):
                    os.remove(out)
                continue
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(path, "rb") as file:
                data = file.read()
            with open(out, "wb") as file:
                file.write(data.translate(rotate))


if __name__ == "__main__":
    main(*sys.argv[1:])
