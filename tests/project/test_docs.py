"""The documentation: a short README, a docs site that builds in strict mode, every setting documented, and every
citation resolving inside the repository."""

import os
import re
import subprocess
import sys
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
TWO_COMMANDS = """# benchweb

```sh
./bw run     # set up, then start benchweb (web + Celery worker + beat + embedded Redis) and print its URL
./bw test    # set up, then lint and run the whole test suite (SQLite, and PostgreSQL when reachable)
```
"""
# Paths that name a place outside this repository: the workplace's shared folder, another checkout.
OUTSIDE = re.compile(r"\.\./shared\b|shared[/]docs\b|shared[/]fixtures\b|/work/(?:shared|main|wt)\b")
# "docs/....md#anchor", as code and docs cite a section.
CITATION = re.compile(
    r"(?<![/\w.-])docs/((?:reference|user-guide|operations|development|decisions)/[\w-]+\.md|[\w-]+\.md)(?:#([\w-]+))?"
)


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    files = []
    for name in names:
        path = ROOT / name
        if path.suffix in {".png", ".ico", ".gz"} or not path.is_file():
            continue
        files.append(path)
    return files


def anchors(page: Path) -> set[str]:
    """The heading ids mkdocs gives a page (its toc extension's slugify, as GitHub's nearly always agree)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {slugify(re.sub(r"[`*]", "", title).strip(), "-") for title in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_the_readme_is_short_and_starts_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith(TWO_COMMANDS), "README.md must open with the title and the ./bw run / ./bw test block"
    assert len(readme.splitlines()) <= 250, f"README.md has {len(readme.splitlines())} lines; move detail into docs/"
    assert "docs/images/disk-page.png" in readme and (DOCS / "images" / "disk-page.png").is_file()


def test_every_environment_variable_the_settings_read_is_documented():
    settings = (ROOT / "benchweb" / "settings.py").read_text()
    read = r"""(?:environ\.get|environ\[|env_bool|env_list)\(?\s*["']([A-Z][A-Z0-9_]+)["']"""
    names = set(re.findall(read, settings))
    assert {"DATABASE_URL", "REDIS_URL", "BENCHWEB_FIELD_KEYS", "BENCHWEB_TIME_ZONE"} <= names, names
    docs = "\n".join(page.read_text() for page in DOCS.rglob("*.md"))
    missing = sorted(name for name in names if not re.search(rf"`{name}`|\b{name}=", docs))
    assert missing == [], f"settings read {missing}; docs/ never names them (see docs/operations/configuration.md)"


def test_no_file_cites_a_path_outside_the_repository():
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert cited == [], "paths outside the repository are cited:\n" + "\n".join(cited)


def test_every_docs_citation_names_a_page_and_a_section_that_exist():
    broken = []
    for path in tracked_text_files():
        for page_name, anchor in CITATION.findall(path.read_text(errors="replace")):
            page = DOCS / page_name
            if not page.is_file():
                broken.append(f"{path.relative_to(ROOT)}: docs/{page_name} does not exist")
            elif anchor and anchor not in anchors(page):
                broken.append(f"{path.relative_to(ROOT)}: docs/{page_name} has no section #{anchor}")
    assert broken == [], "\n".join(broken)


def test_the_fio_and_ndisk64_readers_cite_sections_of_their_reference_by_anchor():
    """The readers cite "(#section)" after naming their reference page once; each such section must exist."""
    for module, page in (("fio_json", "fio-output"), ("fio_text", "fio-output"), ("fio_terse", "fio-output")):
        text = (ROOT / "jobs" / "tools" / f"{module}.py").read_text()
        assert f"docs/reference/{page}.md" in text
        cited = set(re.findall(r"(?:[(, ]|\.md)#([a-z0-9][a-z0-9-]+)", text))
        assert cited, module
        assert cited <= anchors(DOCS / "reference" / f"{page}.md"), cited - anchors(DOCS / "reference" / f"{page}.md")


def test_the_docs_site_builds_in_strict_mode(tmp_path):
    """The same build ./bw test runs: a broken link or anchor, or a page left out of the nav, fails it."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "fio-output" / "index.html").is_file()
    assert (tmp_path / "site" / "grafana" / "benchweb-dashboard.json").is_file()
