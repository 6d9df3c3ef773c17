"""The Python side of benches/references.rs: jedi's answers on one tree.

  python references_jedi.py candidates ROOT
      every function, method and class defined in ROOT's .py files, one JSON
      object a line: {"name", "file", "line", "column"}.
  python references_jedi.py references ROOT WANTED < CANDIDATES
      for each candidate (JSON lines, in the order given) jedi's project-wide
      references from its definition site, until WANTED of them have a use in
      another file; one JSON object a line: {"name", "file", "line", "uses":
      [{"file", "line", "import"}], "cross_file"}.

A use is a reference that is not the name of a `def` or `class` (those are
the definitions the tool leaves out); an import of the name is a use, and
says so. Paths are relative to ROOT with '/'.
"""

import json
import os
import sys

import jedi
import parso

SPECIAL = ("__", "__")


def relative(root, path):
    return os.path.relpath(str(path), root).replace(os.sep, "/")


def python_files(root):
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def candidates(root):
    project = jedi.Project(root)
    trees = Trees()
    for path in python_files(root):
        script = jedi.Script(path=path, project=project)
        for name in script.get_names(all_scopes=True, definitions=True, references=False):
            # Imported names are definitions to jedi too; only def and class here.
            if not is_defined_name(trees.leaf(path, name.line, name.column)):
                continue
            # Special methods are called by the language, not by their name.
            if name.name.startswith(SPECIAL[0]) and name.name.endswith(SPECIAL[1]):
                continue
            print(json.dumps({
                "name": name.name,
                "file": relative(root, path),
                "line": name.line,
                "column": name.column,
            }))


class Trees:
    """parso trees of the files references land in, parsed once each."""

    def __init__(self):
        self.trees = {}

    def leaf(self, path, line, column):
        tree = self.trees.get(path)
        if tree is None:
            with open(path, encoding="utf-8", errors="replace") as source:
                tree = parso.parse(source.read())
            self.trees[path] = tree
        return tree.get_leaf_for_position((line, column))


def is_defined_name(leaf):
    parent = leaf.parent
    return parent is not None and parent.type in ("funcdef", "classdef") and parent.name is leaf


def references(root, wanted):
    project = jedi.Project(root)
    trees = Trees()
    scripts = {}
    found = 0
    for text in sys.stdin:
        if found >= wanted:
            break
        candidate = json.loads(text)
        path = os.path.join(root, candidate["file"])
        script = scripts.get(path)
        if script is None:
            script = scripts[path] = jedi.Script(path=path, project=project)
        uses = []
        for reference in script.get_references(
            candidate["line"], candidate["column"], include_builtins=False, scope="project"
        ):
            if reference.module_path is None:
                continue
            file = relative(root, reference.module_path)
            if file.startswith("../"):
                continue
            leaf = trees.leaf(str(reference.module_path), reference.line, reference.column)
            if leaf is None or is_defined_name(leaf):
                continue
            imported = leaf.search_ancestor("import_from", "import_name") is not None
            uses.append({"file": file, "line": reference.line, "import": imported})
        cross_file = any(use["file"] != candidate["file"] for use in uses)
        found += cross_file
        candidate.update(uses=uses, cross_file=cross_file)
        print(json.dumps(candidate), flush=True)


def main():
    mode, root = sys.argv[1], os.path.abspath(sys.argv[2])
    if mode == "candidates":
        candidates(root)
    elif mode == "references":
        references(root, int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode!r}: candidates or references")


if __name__ == "__main__":
    main()
