"""templates/ is laid out like the packages (docs/architecture.md, "Templates"): every template of the jobs app
is in the folder of a jobs/ package, except the start page and the form partials every concept uses."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
SHARED = {"home.html", "_field.html", "_viewer_note.html"}


def misplaced(templates: Path, packages: Path) -> list[str]:
    """The templates under `templates` that are neither shared nor in the folder of a package of `packages`."""
    found = []
    for path in sorted(templates.rglob("*.html")):
        parts = path.relative_to(templates).parts
        if len(parts) == 1:
            ok = parts[0] in SHARED
        else:
            ok = len(parts) == 2 and (packages / parts[0] / "__init__.py").is_file()
        if not ok:
            found.append("/".join(parts))
    return found


def test_every_jobs_template_is_in_the_folder_of_a_jobs_package():
    assert misplaced(ROOT / "templates" / "jobs", ROOT / "jobs") == []


def test_a_folder_that_matches_no_package_is_found(tmp_path):
    # The old layout: templates/jobs/manage/ held host, disk and profile forms; there is no jobs/manage package.
    (tmp_path / "templates" / "manage").mkdir(parents=True)
    (tmp_path / "templates" / "manage" / "host_form.html").write_text("")
    (tmp_path / "templates" / "host_detail.html").write_text("")
    (tmp_path / "jobs" / "hosts").mkdir(parents=True)
    (tmp_path / "jobs" / "hosts" / "__init__.py").write_text("")
    assert misplaced(tmp_path / "templates", tmp_path / "jobs") == ["host_detail.html", "manage/host_form.html"]
