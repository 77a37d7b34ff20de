"""A reproducible Markdown corpus for benchmarks, generated from the standard library's own docs.

No network and no download: every Python installation carries these docstrings. The output is
deterministic for a given Python version.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from pathlib import Path

SKIP_PREFIXES = ("test", "idlelib", "tkinter", "turtle", "lib2to3", "antigravity", "this", "_")


def _module_markdown(module) -> str:
    parts = [f"# {module.__name__}\n", inspect.getdoc(module) or "", ""]
    for name, member in sorted(vars(module).items()):
        if name.startswith("_") or getattr(member, "__module__", None) != module.__name__:
            continue
        if not (inspect.isclass(member) or inspect.isfunction(member)):
            continue
        doc = inspect.getdoc(member)
        if not doc:
            continue
        try:
            signature = f"{name}{inspect.signature(member)}"
        except (TypeError, ValueError):
            signature = name
        parts += [f"## {name}\n", f"```python\n{signature}\n```\n", doc, ""]
        if inspect.isclass(member):
            for attr, value in sorted(vars(member).items()):
                method_doc = inspect.getdoc(value) if inspect.isfunction(value) else None
                if attr.startswith("_") or not method_doc:
                    continue
                parts += [f"### {name}.{attr}\n", method_doc, ""]
    return "\n".join(parts)


def _modules():
    """The standard library's modules, then numpy's and Django's (pinned by uv.lock)."""
    stdlib = [str(Path(inspect.getfile(inspect)).parent)]
    queue = [*sorted(m.name for m in pkgutil.iter_modules(stdlib)), "numpy", "django"]
    while queue:
        name = queue.pop(0)
        if any(part.startswith(SKIP_PREFIXES) or part == "tests" for part in name.split(".")):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception:
            continue
        yield module
        if hasattr(module, "__path__"):
            queue[0:0] = sorted(f"{name}.{m.name}" for m in pkgutil.iter_modules(module.__path__))


def build_corpus(target: Path, *, min_bytes: int) -> tuple[int, int]:
    """Write Markdown into `target` until it adds up to `min_bytes`; return (files, bytes)."""
    target.mkdir(parents=True, exist_ok=True)
    total, files = 0, 0
    for module in _modules():
        if total >= min_bytes:
            break
        text = _module_markdown(module)
        if len(text) < 2000:
            continue
        (target / f"{module.__name__}.md").write_text(text)
        total += len(text.encode())
        files += 1
    return files, total
