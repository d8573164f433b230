"""The code's shape for issue #38: docstring share, largest modules and longest functions of ``src/mirrorspark``.

``python tools/code_shape.py [--top N] [paths...]``: docstring lines (module, class and function
docstrings) over all lines, per package and in total; the modules over 700 lines; the functions
whose code (docstring excluded) is over 80 lines.
"""

from __future__ import annotations

import argparse
import ast
import itertools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "mirrorspark"
MODULE_LIMIT = 700
FUNCTION_LIMIT = 80


def _is_text(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` is a bare string (a docstring)."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _docstring_lines(tree: ast.AST) -> int:
    """Lines taken by every docstring in ``tree``."""
    total = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and _is_text(body[0]):
                total += (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
        # attribute docstrings: a string expression right after an assignment
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for prev, stmt in itertools.pairwise(stmts):
                if isinstance(prev, (ast.Assign, ast.AnnAssign)) and _is_text(stmt):
                    total += (stmt.end_lineno or stmt.lineno) - stmt.lineno + 1
    return total


def _long_functions(tree: ast.AST, path: Path) -> list[tuple[int, str]]:
    """``(code lines, name)`` of the functions over :data:`FUNCTION_LIMIT` lines of code."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            body = node.body
            if body and _is_text(body[0]):
                lines -= (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
            if lines > FUNCTION_LIMIT:
                out.append((lines, f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}"))
    return out


def main() -> None:
    """Print the shape of ``src/mirrorspark``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10, help="largest modules to list")
    args = parser.parse_args()
    per_package: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    sizes, longest = [], []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        lines, docs = len(text.splitlines()), _docstring_lines(tree)
        rel = path.relative_to(ROOT)
        package = rel.parts[0] if len(rel.parts) > 1 else "(top)"
        if package == "replication" and len(rel.parts) > 2:
            package = f"replication/{rel.parts[1]}"
        per_package[package][0] += lines
        per_package[package][1] += docs
        sizes.append((lines, str(rel)))
        longest += _long_functions(tree, path)
    total_lines = sum(v[0] for v in per_package.values())
    total_docs = sum(v[1] for v in per_package.values())
    print(f"docstrings: {total_docs:,} of {total_lines:,} lines ({100 * total_docs / total_lines:.1f} %)")
    for package, (lines, docs) in sorted(per_package.items()):
        print(f"  {package:24} {docs:6,} of {lines:7,} ({100 * docs / lines:5.1f} %)")
    print(f"largest modules (limit {MODULE_LIMIT}):")
    for lines, rel in sorted(sizes, reverse=True)[: args.top]:
        print(f"  {lines:5} {rel}{'  OVER' if lines > MODULE_LIMIT else ''}")
    print(f"functions over {FUNCTION_LIMIT} lines of code: {len(longest)}")
    for lines, name in sorted(longest, reverse=True):
        print(f"  {lines:5} {name}")


if __name__ == "__main__":
    main()
