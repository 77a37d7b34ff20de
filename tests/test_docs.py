"""Documentation cannot drift: every setting and command is documented."""

import re
from pathlib import Path

from django.conf import settings
from django.core.management import get_commands

DOCS = Path(settings.BASE_DIR) / "docs"


def test_every_rag_setting_is_documented_in_configuration_md():
    source = (Path(settings.BASE_DIR) / "config" / "settings.py").read_text()
    names = set(re.findall(r'"(RAG_[A-Z0-9_]+)"', source))
    assert len(names) >= 10  # the regex still finds the settings
    documented = (DOCS / "configuration.md").read_text()
    missing = sorted(name for name in names if f"`{name}`" not in documented)
    assert not missing, f"undocumented settings in docs/configuration.md: {missing}"


def test_every_environment_variable_is_documented():
    source = (Path(settings.BASE_DIR) / "config" / "settings.py").read_text()
    names = set(re.findall(r'(?:env_\w+|os\.environ\.get)\(\s*"([A-Z0-9_]+)"', source))
    documented = (DOCS / "configuration.md").read_text()
    missing = sorted(name for name in names if f"`{name}`" not in documented)
    assert not missing, f"undocumented environment variables: {missing}"


def test_every_project_command_is_documented():
    ours = sorted(name for name, app in get_commands().items() if app in {"ragapp", "ingestion"})
    assert "ingest_docs" in ours
    text = (
        "".join(p.read_text() for p in DOCS.glob("*.md"))
        + (Path(settings.BASE_DIR) / "README.md").read_text()
    )
    missing = [name for name in ours if f"manage.py {name}" not in text]
    assert not missing, f"commands missing from docs/ and README.md: {missing}"


ROOT = Path(settings.BASE_DIR)
PACKAGE_ROOTS = ("config", "ragapp", "ingestion", "deploy")


def layout_paths() -> set[str]:
    """The paths named in architecture.md's "Project layout" block, folders ending in `/`.

    Each line names files or folders (comma-separated) before a gap of two spaces, indented two
    spaces per level under the folder that holds them.
    """
    text = (DOCS / "architecture.md").read_text()
    block = text.split("## Project layout", 1)[1].split("```", 2)[1]
    paths, stack = set(), []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        stack = stack[:depth]
        for name in (n.strip() for n in names.split(",")):
            paths.add("".join(stack) + name)
        if names.endswith("/") and "," not in names:
            stack.append(names)
    return paths


def test_every_path_in_the_layout_exists():
    paths = layout_paths()
    assert {"ragapp/runs/runner.py", "ragapp/trace/", "ingestion/loaders/"} <= paths
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_package_is_in_the_layout():
    named = layout_paths()
    packages = sorted(
        f"{init.parent.relative_to(ROOT)}/"
        for root in PACKAGE_ROOTS
        for init in (ROOT / root).rglob("__init__.py")
        if "migrations" not in init.parts
    )
    assert "ragapp/runs/" in packages
    # A folder path names its parents too: `management/commands/` names `management/`.
    missing = [p for p in packages if not any(n.startswith(p) for n in named)]
    assert not missing, f"packages missing from docs/architecture.md's layout: {missing}"


def test_the_portable_wheel_instructions_name_the_pinned_version():
    # docs/models.md tells a user on an AVX2-only CPU which xllamacpp wheel to install, and .ci/run
    # reads the same pin: the two must not drift from pyproject.toml.
    root = Path(settings.BASE_DIR)
    pyproject = (root / "pyproject.toml").read_text()
    pin = re.compile(r'"xllamacpp==([^"]+)"')
    (pinned,) = pin.findall(pyproject)
    assert pin.findall((DOCS / "models.md").read_text()) == [pinned]
    # .ci/run's sed reads the pin from the line that starts with it, as this pattern does.
    assert re.findall(r'^ *"xllamacpp==([^"]*)",', pyproject, re.MULTILINE) == [pinned]
    assert """s/^ *"xllamacpp==\\([^"]*\\)",.*/\\1/p""" in (root / ".ci" / "run").read_text()
