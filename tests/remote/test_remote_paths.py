"""Paths are data, never text to re-parse: the validator (jobs/paths.py) where a path enters, the NUL-ended
answers of jobs/remote/, and a clean-up that removes only <base>/<uuid> — against a real sshd.

The regression: a run directory base holding a line separator split the preflight's `key=value` answer at
Python's str.splitlines(), the run directory read back as a directory above it, and the clean-up's
`rm -rf` removed that directory and everything in it.
"""

from __future__ import annotations

import shlex
import subprocess
import time
import unicodedata
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from jobs import environment, paths, remote, safety, ssh
from jobs.disks.forms import DiskForm
from jobs.hosts.forms import HostForm
from jobs.models import Disk, Host, Run
from jobs.remote.protocol import float_or_none, int_or_none
from jobs.runs import launching, queueing
from jobs.tools import fio, ndisk
from tests.builders import quick_profile, team_with_host
from tests.tools.profiles import fio_profile, ndisk_profile
from tests.world import client_for, make_world, post

# Every character that ends a line for someone: sh and printf (LF), a terminal (CR), Python's splitlines
# (also U+0085, U+2028, U+2029, VT, FF, FS, GS, RS).
SEPARATORS = ["\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
REFUSED = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
TOOL_CHECK = "echo fio-3.36"
# Every Unicode character, surrogates and unassigned ones included, with the separators made frequent.
any_char = st.one_of(st.characters(exclude_categories=()), st.sampled_from([*SEPARATORS, "/", ".", "~", "\0"]))


@pytest.fixture
def conn(sshd) -> Iterator[ssh.Connection]:
    with ssh.connect(sshd.target()) as connection:
        yield connection


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root, with each file's bytes: what must be unchanged after a refusal."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def _shared_with_canary(tmp_path: Path) -> tuple[Path, Path]:
    shared = tmp_path / "shared"
    (shared / "another-run").mkdir(parents=True)
    canary = shared / "another-run" / "canary"
    canary.write_bytes(b"another run's result")
    return shared, canary


# ----------------------------------------------------------------------------------------- the validator


@pytest.mark.parametrize("separator", [*SEPARATORS, "\u200b", "\u202e", "\ue000", "\U000e0001", "\ud800", "\x00"])
def test_a_path_with_a_separator_or_an_invisible_character_is_refused_naming_the_field(separator: str) -> None:
    with pytest.raises(paths.PathError) as refused:
        paths.check(f"/srv/runs{separator}x", field="run directory", home=True)

    message = str(refused.value)
    assert message.startswith("The run directory contains")
    assert "give an absolute path or one starting with ~/" in message
    assert separator not in message  # shown escaped, so the message itself cannot split a log line


@pytest.mark.parametrize(
    ("value", "home", "code"),
    [
        ("", False, "empty"),
        ("data/bench", False, "relative"),
        ("~/runs", False, "relative"),
        ("~other/runs", True, "home"),
        ("/data/../etc", False, "parent"),
        ("~/..", True, "parent"),
        ("/" + "x" * paths.MAX_LENGTH, False, "long"),
    ],
)
def test_an_unusable_path_gets_its_own_reason(value: str, home: bool, code: str) -> None:
    assert paths.problem(value, home=home) == code


@pytest.mark.parametrize("value", ["/", "/dev/nvme1n1", "/srv/bench runs/ü日本/a..b/.hidden", "/x/./y"])
def test_an_ordinary_absolute_path_is_accepted(value: str) -> None:
    assert paths.check(value, field="target path") == value


@pytest.mark.parametrize("value", ["~", "~/", "~/.benchweb/runs"])
def test_a_run_directory_in_the_login_users_home_is_accepted(value: str) -> None:
    assert paths.problem(value, home=True) == ""


@settings(max_examples=3000, deadline=None, database=None)
@given(
    st.one_of(
        st.text(any_char, max_size=40),
        st.builds(lambda parts: "/" + "/".join(parts), st.lists(st.text(any_char, max_size=6), max_size=6)),
    ),
    st.booleans(),
)
def test_an_accepted_path_has_no_character_anything_reads_as_a_line_break(value: str, home: bool) -> None:
    problem = paths.problem(value, home=home)

    bad = [c for c in value if unicodedata.category(c) in REFUSED]
    if problem:
        assert problem in paths.PROBLEMS
        return
    assert not bad
    assert value.splitlines() == [value] and value.split("\n") == [value]
    assert value.startswith("/") or (home and (value == "~" or value.startswith("~/")))
    assert ".." not in value.split("/")
    assert 0 < len(value) <= paths.MAX_LENGTH
    assert value.encode("utf-8").decode("utf-8") == value  # no surrogate: it reaches the host as it is
    assert safety._path_problem(value) == ("" if value.startswith("/") else "relative")


# ----------------------------------------------------------------------------------------- where paths enter


@pytest.mark.django_db
@pytest.mark.parametrize("separator", ["\n", "\r", "\x85", "\u2028", "\u2029"])
def test_a_run_directory_with_a_line_separator_is_refused_by_the_model_the_form_and_the_api(
    separator: str, team, credential
) -> None:
    bad = f"/srv/shared{separator}runs"
    host = Host(team=team, name="h", address="a", username="u", credential=credential, run_base_dir=bad)
    with pytest.raises(Exception) as refused:
        host.full_clean()
    assert "run_base_dir" in refused.value.message_dict

    form = HostForm(
        {"name": "h", "address": "a", "port": 22, "username": "u", "os": "linux", "credential_mode": "none",
         "run_base_dir": bad},
        team=team,
    )  # fmt: skip
    assert not form.is_valid()
    assert "The run directory contains" in form.errors["run_base_dir"][0]

    world, secret = make_world("paths")
    response = post(client_for(secret), "/api/v1/hosts/", {"name": "h2", "address": "a", "username": "u",
                                                           "run_base_dir": bad})  # fmt: skip
    assert response.status_code == 400, response.content
    assert "The run directory contains" in response.json()["run_base_dir"][0]
    response = post(client_for(secret), f"/api/v1/hosts/{world.host.pk}/", {"run_base_dir": bad}, method="patch")
    assert response.status_code == 400
    world.host.refresh_from_db()
    assert world.host.run_base_dir == ""
    assert not Host.objects.filter(run_base_dir=bad).exists()


# What a shell, fio's job file or a glob reads: each was once saved and then refused by every run on the host.
SHELL_MEANINGFUL = ["/srv/$(id)/runs", "/srv/`id`/runs", "/srv/it's/runs", '/srv/"x"/runs', "/srv/bench runs",
                    "/srv/runs*", "~/runs $HOME", "/srv/a:b", "/srv/ü"]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("bad", SHELL_MEANINGFUL)
def test_a_run_directory_the_tools_would_refuse_is_refused_at_save_naming_the_field_and_the_characters(
    bad: str, team, credential, owner_client
) -> None:
    fix = "letters, digits and . _ + @ , - / only"
    host = Host(team=team, name="h", address="a", username="u", credential=credential, run_base_dir=bad)
    with pytest.raises(ValidationError) as refused:
        host.full_clean()
    assert refused.value.message_dict["run_base_dir"][0].startswith("The run directory contains a character")
    assert fix in refused.value.message_dict["run_base_dir"][0]

    typed = {"name": "h3", "address": "a", "port": "22", "username": "u", "os": "linux", "credential_mode": "none"}
    page = owner_client.post("/hosts/new/", typed | {"run_base_dir": bad})
    assert page.status_code == 200
    assert fix in page.context["form"].errors["run_base_dir"][0]
    assert bad in page.context["form"]["run_base_dir"].value()  # what was typed is kept to correct

    world, secret = make_world("paths")
    response = post(client_for(secret), "/api/v1/hosts/", {"name": "h2", "address": "a", "username": "u",
                                                           "run_base_dir": bad})  # fmt: skip
    assert response.status_code == 400, response.content
    assert fix in response.json()["run_base_dir"][0]
    response = post(client_for(secret), f"/api/v1/hosts/{world.host.pk}/", {"run_base_dir": bad}, method="patch")
    assert response.status_code == 400
    world.host.refresh_from_db()
    assert world.host.run_base_dir == ""
    assert not Host.objects.filter(run_base_dir=bad).exists()


@pytest.mark.django_db
def test_a_host_page_says_a_stored_run_directory_refuses_every_run_and_how_to_fix_it(host, owner_client) -> None:
    Host.objects.filter(pk=host.pk).update(run_base_dir="/srv/$(id)/runs")  # stored before the rule

    page = owner_client.get(f"/hosts/{host.pk}/").content.decode()

    assert "No run can start on this host: The run directory contains a character" in page
    assert "letters, digits and . _ + @ , - / only" in page and f'href="/hosts/{host.pk}/edit/"' in page
    Host.objects.filter(pk=host.pk).update(run_base_dir="/srv/runs")
    assert "No run can start" not in owner_client.get(f"/hosts/{host.pk}/").content.decode()


@settings(max_examples=2000, deadline=None, database=None)
@given(
    st.text(st.one_of(st.characters(min_codepoint=32, max_codepoint=126), st.sampled_from("ü\u2028\xa0")), max_size=8)
)
def test_every_run_directory_that_can_be_saved_is_one_the_tools_take(value: str) -> None:
    # The two checks of one value: at save (jobs/paths.py) and in the job file and command line (jobs/tools/).
    base = f"/{value}" if not value.startswith("~") else value
    assume(not paths.problem(base, home=True))
    run_dir = f"{remote.resolved_base(base, '/home/bench')}/{uuid.uuid4()}"

    fio.build_fio_job(fio_profile(), "/dev/nvme1n1", "block", run_dir, readonly=False)
    ndisk.build_ndisk_argv(ndisk_profile(), "/dev/nvme1n1", "block", run_dir)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad", ["nd\ndisk64", "nd\u2028isk64", "bin/ndisk64", "/opt/../ndisk64", "nd disk", "..", "$(id)"]
)
def test_an_ndisk64_path_that_is_neither_a_command_name_nor_an_absolute_path_is_refused(bad: str, team) -> None:
    host = Host(team=team, name="h", address="a", username="u", ndisk64_path=bad)
    with pytest.raises(Exception) as refused:
        host.full_clean()
    assert "The ndisk64 path " in refused.value.message_dict["ndisk64_path"][0]

    world, secret = make_world("ndisk-path")
    response = post(client_for(secret), f"/api/v1/hosts/{world.host.pk}/", {"ndisk64_path": bad}, method="patch")
    assert response.status_code == 400, response.content
    assert "ndisk64 path" in response.json()["ndisk64_path"][0]
    world.host.refresh_from_db()
    assert world.host.ndisk64_path == ""


@pytest.mark.parametrize("good", ["ndisk64", "ndisk64-7.1", "/usr/local/bin/ndisk64", "/opt/nstress/ndisk 64"])
def test_an_ndisk64_path_may_be_a_command_name_or_an_absolute_path(good: str) -> None:
    assert paths.problem(good, command=True) == ""


@pytest.mark.django_db
@pytest.mark.parametrize("separator", ["\n", "\x85", "\u2028", "\u2029", "\u200e"])
def test_a_target_path_with_a_line_separator_is_refused_by_the_model_the_form_and_the_api(separator: str, host) -> None:
    bad = f"/data{separator}bench"
    disk = Disk(host=host, label="d", target_path=bad, disk_type="custom", spec_iops=1000)
    with pytest.raises(Exception) as refused:
        disk.full_clean()
    assert list(refused.value.message_dict) == ["target_path"]

    form = DiskForm(
        {"label": "d", "target_path": bad, "kind": "directory", "disk_type": "custom", "stripes": 1,
         "spec_iops": 1000, "throughput_unit": "MB/s"},
        instance=Disk(host=host),
    )  # fmt: skip
    assert not form.is_valid()
    assert form.errors["target_path"] == [str(_refusal(bad, "target path"))]

    world, secret = make_world("paths")
    response = post(client_for(secret), "/api/v1/disks/", {"host": world.host.pk, "label": "d2", "target_path": bad,
                                                           "disk_type": "custom", "spec_iops": 1000})  # fmt: skip
    assert response.status_code == 400, response.content
    assert response.json()["target_path"] == [str(_refusal(bad, "target path"))]


def _refusal(value: str, field: str) -> paths.PathError:
    with pytest.raises(paths.PathError) as refused:
        paths.check(value, field=field)
    return refused.value


# ----------------------------------------------------------------------------------------- at the SSH boundary


@pytest.mark.parametrize("separator", ["\n", "\r", "\x85", "\u2028", "\u2029"])
def test_a_stored_run_directory_with_a_line_separator_never_removes_the_directory_above_it(
    separator: str, conn, tmp_path
) -> None:
    # What the old code did with this base: the preflight's run directory read back as `shared`, and the
    # clean-up removed it with another run's files in it. It failed (canary gone) before this change.
    shared, canary = _shared_with_canary(tmp_path)
    base = f"{shared}{separator}runs"
    run_uuid = str(uuid.uuid4())
    before = _tree(tmp_path)

    with pytest.raises(remote.RemoteError, match="The run directory contains"):
        pre = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
        remote.cleanup(conn, pre.run_dir, None, base=base, run_uuid=run_uuid)
    for run_dir in (str(shared), f"{base}/{run_uuid}"):
        with pytest.raises(remote.RemoteError):
            remote.cleanup(conn, run_dir, None, base=base, run_uuid=run_uuid)

    assert canary.read_bytes() == b"another run's result"
    assert _tree(tmp_path) == before  # nothing made either: the base is refused before anything is sent


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("separator", ["\n", "\u2028", " $(id) ", "`id`*"])
def test_a_run_on_a_host_whose_stored_run_directory_the_tools_refuse_fails_before_sending_and_removes_nothing(
    separator: str, fio_installed, sshd, tmp_path
) -> None:
    shared, canary = _shared_with_canary(tmp_path)
    team, host = team_with_host(sshd)
    # Stored as an old release or a direct database edit could have: no model validation on the way in.
    Host.objects.filter(pk=host.pk).update(run_base_dir=f"{shared}{separator}runs")
    target = tmp_path / "bench"
    target.mkdir()
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(target), disk_type="custom")
    run = queueing.create_run(disk, quick_profile(team))
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED)
    before = _tree(tmp_path)

    launching.launch(run.pk)

    run.refresh_from_db()
    assert run.state == Run.State.ERROR
    assert "The run directory contains" in run.explanation and "host page" in run.explanation
    assert "e.g. /srv/benchweb/runs" in run.explanation  # the fix
    assert canary.read_bytes() == b"another run's result"
    assert _tree(tmp_path) == before


def test_a_preflight_makes_the_run_directory_it_computed_and_says_whether_it_was_launched(conn, tmp_path) -> None:
    base, run_uuid = f"{tmp_path}/runs/", str(uuid.uuid4())

    first = remote.preflight(conn, base, run_uuid, "printf 'fio-3.36\\0\\nbenchweb_safety=1'; exit 3", "echo end=1")
    (Path(first.run_dir) / "launched").mkdir()
    second = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")

    assert first.base == f"{tmp_path}/runs" and first.run_dir == f"{tmp_path}/runs/{run_uuid}"
    assert Path(first.run_dir).is_dir() and (tmp_path / "runs" / "locks").is_dir()
    # The locks and the done markers are inside the base too: nothing is made beside it.
    assert (tmp_path / "runs" / "done").is_dir() and [p.name for p in tmp_path.iterdir()] == ["runs"]
    # The tool's output is taken by its length: a NUL or a made-up report line in it stays the tool's.
    assert (first.tool_status, first.tool_output, first.safety_report) == (
        3, "fio-3.36\0\nbenchweb_safety=1", "end=1\n"
    )  # fmt: skip
    assert not first.launched and second.launched
    assert sorted(p.name for p in Path(first.run_dir).iterdir()) == ["launched"]


def test_a_preflight_in_the_login_users_home_resolves_it_on_the_host(conn, sshd) -> None:
    run_uuid = str(uuid.uuid4())
    home = conn.run('printf %s "$HOME"').stdout.decode()
    base = f"~/.benchweb-test-{run_uuid}/runs"
    try:
        pre = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
        assert pre.run_dir == f"{home}/.benchweb-test-{run_uuid}/runs/{run_uuid}"
        assert Path(pre.run_dir).is_dir()
        # `~/x/runs` keeps its locks and done markers in itself, never in `~/x` (or, for `~/x`, in the home).
        assert sorted(p.name for p in Path(home, f".benchweb-test-{run_uuid}").iterdir()) == ["runs"]
        assert {"locks", "done"} <= {p.name for p in Path(pre.run_dir).parent.iterdir()}
        remote.cleanup(conn, pre.run_dir, None, base=base, run_uuid=run_uuid)
        assert not Path(pre.run_dir).exists() and Path(pre.run_dir).parent.is_dir()
    finally:
        conn.run(f'rm -rf -- "$HOME"/.benchweb-test-{run_uuid}')


@pytest.mark.parametrize(
    ("home", "why"),
    [
        ("{tmp}/home\u2028x", "as the host resolved it"),
        ("", "home on the host"),
        # A home the tools would refuse in a path: refused before anything is started, not by fio afterwards.
        ("{tmp}/my home", "as the host resolved it .* character the tools do not take"),
    ],
)
def test_a_home_that_is_not_a_usable_path_is_refused_when_the_host_resolves_it(
    home: str, why: str, conn, tmp_path
) -> None:
    # HOME comes from the host (its passwd entry), not from benchweb: the resolved base is checked like any path.
    home = home.format(tmp=tmp_path)
    run = conn.run
    conn.run = lambda command, **kwargs: run(f"HOME={shlex.quote(home)}; export HOME\n{command}", **kwargs)

    with pytest.raises(remote.RemoteError, match=why):
        remote.preflight(conn, "~/runs", str(uuid.uuid4()), TOOL_CHECK, "")


# ----------------------------------------------------------------------------------------- the clean-up


def test_a_cleanup_removes_the_run_directory_and_nothing_beside_it(conn, tmp_path) -> None:
    base, run_uuid = str(tmp_path / "runs"), str(uuid.uuid4())
    pre = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
    (Path(pre.run_dir) / "stdout").write_text("fio output")
    neighbour = tmp_path / "runs" / str(uuid.uuid4())
    neighbour.mkdir()
    (neighbour / "status").write_text("0")
    target = tmp_path / "bench"
    target.mkdir()
    (target / f"benchweb-{run_uuid}.0.0").write_bytes(b"x")
    (target / "benchweb-other.0.0").write_bytes(b"y")

    remote.cleanup(conn, pre.run_dir, f"{target}/benchweb-{run_uuid}*", base=base, run_uuid=run_uuid)
    remote.cleanup(conn, pre.run_dir, None, base=base, run_uuid=run_uuid)  # a second time: already gone

    assert not Path(pre.run_dir).exists()
    assert (neighbour / "status").read_text() == "0"
    assert [p.name for p in target.iterdir()] == ["benchweb-other.0.0"]


@pytest.mark.parametrize(
    "wrong",
    [
        "{base}",  # the base itself: the regression
        "{tmp}",
        "{base}/{other}",  # another run's directory
        "{tmp}/elsewhere/{uuid}",  # the run's name, in another directory
        "{base}/{uuid}/..",
        "{base}/../runs/{uuid}",
        "{base}/{uuid}\n",
        "{base}\n/{uuid}",
        "{base}/{uuid}/launched",
        "",
        "/",
    ],
)
def test_a_cleanup_of_anything_but_base_slash_uuid_is_refused_before_sending_and_removes_nothing(
    wrong: str, conn, tmp_path
) -> None:
    base, run_uuid = str(tmp_path / "runs"), str(uuid.uuid4())
    remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
    for directory in (f"{base}/{run_uuid}/launched", f"{tmp_path}/elsewhere/{run_uuid}", f"{base}/{uuid.uuid4()}"):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "canary").write_text("keep")
    before = _tree(tmp_path)
    run_dir = wrong.format(base=base, tmp=tmp_path, uuid=run_uuid, other=uuid.uuid4())
    sent = []
    conn.run = lambda command, **kwargs: sent.append(command)  # nothing at all may reach the host

    with pytest.raises(remote.RemoteError, match=r"refused to remove|nothing was sent"):
        remote.cleanup(conn, run_dir, None, base=base, run_uuid=run_uuid)

    assert sent == []
    assert _tree(tmp_path) == before


def test_a_cleanup_removes_links_in_the_run_directory_not_what_they_point_to_in_paths_a_shell_would_split(
    conn, tmp_path
) -> None:
    # The run directory keeps to the tools' characters (jobs/paths.py); a target path need not.
    odd = tmp_path / "it's a $dir; `x`"
    odd.mkdir()
    base, run_uuid = str(tmp_path / "runs"), str(uuid.uuid4())
    pre = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "canary").write_text("keep")
    (Path(pre.run_dir) / "link").symlink_to(kept)
    target = odd / "bench *"
    target.mkdir()
    (target / f"benchweb-{run_uuid}").write_bytes(b"x")
    (target / "other").write_bytes(b"y")

    remote.cleanup(conn, pre.run_dir, f"{target}/benchweb-{run_uuid}", base=base, run_uuid=run_uuid)

    assert not Path(pre.run_dir).exists()
    assert (kept / "canary").read_text() == "keep"
    assert [p.name for p in target.iterdir()] == ["other"]
    assert [p.name for p in odd.iterdir()] == ["bench *"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["done", "locks"]
    assert list((tmp_path / "runs" / "done").iterdir()) == []


def test_the_host_itself_refuses_a_cleanup_outside_the_base_it_resolves(conn, tmp_path) -> None:
    # For a base in the login user's home, Python knows the path only up to the home: `/tmp/.../x/<uuid>`
    # passes its check, and the host, comparing with "$HOME"/x/<uuid>, refuses.
    run_uuid = str(uuid.uuid4())
    elsewhere = tmp_path / "x" / run_uuid
    elsewhere.mkdir(parents=True)
    (elsewhere / "canary").write_text("keep")

    with pytest.raises(remote.RemoteError, match="nothing was removed"):
        remote.cleanup(conn, str(elsewhere), None, base="~/x", run_uuid=run_uuid)

    assert (elsewhere / "canary").read_text() == "keep"


def test_a_cleanup_refuses_test_files_of_another_run_or_an_unusable_directory(conn, tmp_path) -> None:
    base, run_uuid = str(tmp_path / "runs"), str(uuid.uuid4())
    run_dir = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "").run_dir
    for glob in (f"{tmp_path}/benchweb-{uuid.uuid4()}*", f"{tmp_path}\n/benchweb-{run_uuid}*", f"/x/{run_uuid}*"):
        with pytest.raises(remote.RemoteError, match="not this run's own"):
            remote.cleanup(conn, run_dir, glob, base=base, run_uuid=run_uuid)
    assert Path(run_dir).is_dir()


# ----------------------------------------------------------------------------------------- answers


def test_nothing_a_run_wrote_can_forge_the_polls_answer(conn, tmp_path) -> None:
    run_dir = tmp_path / str(uuid.uuid4())
    (run_dir / "launched").mkdir(parents=True)
    # No pid yet, so the host says "starting"; every file a run (or a hostile tool) writes says otherwise.
    (run_dir / "started").write_bytes(b"12\nstate=finished\nexit=0\x85pid=1\0finished\0\n---tail---\n")
    forged = b"\0benchweb-poll\0finished\0" + b"1\0" * 3 + "state=finished\u2028exit=0\n---tail---\n".encode()
    (run_dir / "stdout").write_bytes(forged)

    status = remote.poll(conn, str(run_dir), "stdout")

    assert (status.state, status.pid, status.started_epoch, status.exit_status) == ("starting", None, None, None)
    assert status.tail == forged.decode()


def test_a_finished_run_is_read_back_with_its_numbers(conn, tmp_path) -> None:
    run_dir = tmp_path / str(uuid.uuid4())
    (run_dir / "launched").mkdir(parents=True)
    (run_dir / "pid").write_text("4242\n")
    (run_dir / "started").write_text("1700000000.25\n")
    (run_dir / "status").write_text("3\n")
    (run_dir / "stdout").write_text("fio says\n")

    status = remote.poll(conn, str(run_dir), "stdout")

    assert (status.state, status.pid, status.started_epoch, status.exit_status) == ("finished", 4242, 1700000000.25, 3)
    assert status.tail == "fio says\n"
    assert remote.poll(conn, str(tmp_path / "gone"), "stdout").state == "vanished"


def test_a_run_that_finishes_between_the_polls_two_looks_is_finished_not_dead(conn, tmp_path) -> None:
    """The wrapper writes its status file and exits just after the poll found no status file and just before
    it asks ps. Fault injection: the poll's `ps` is wrapped (a shell function prepended to the script sent
    over the real sshd) so that the wrapper "finishes" at exactly that moment; the process is gone already."""
    run_dir = tmp_path / str(uuid.uuid4())
    (run_dir / "launched").mkdir(parents=True)
    finished = subprocess.Popen(["true"])
    finished.wait()
    (run_dir / "pid").write_text(f"{finished.pid}\n")
    status_file = shlex.quote(str(run_dir / "status"))
    real_run = conn.run

    def run_finishing_at_ps(script: str, **kwargs):
        return real_run(f'ps() {{ echo 0 > {status_file}; command ps "$@"; }}\n' + script, **kwargs)

    conn.run = run_finishing_at_ps
    try:
        status = remote.poll(conn, str(run_dir), "stdout")
    finally:
        conn.run = real_run

    assert (status.state, status.exit_status) == ("finished", 0)


@pytest.mark.parametrize("value", ["inf", "nan", "1_0", "٣", " 3", "-1", "3\n4", "1e9"])
def test_a_number_from_the_host_is_plain_ascii_digits(value: str) -> None:
    assert int_or_none(value) is None and float_or_none(value) is None


no_nul = st.binary(max_size=30).map(lambda b: b.replace(b"\0", b""))


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.binary(max_size=40).filter(lambda b: b"\0benchweb-poll\0" not in b),
    st.lists(no_nul, min_size=4, max_size=4),
    st.binary(max_size=200),
    st.lists(st.text(any_char, max_size=10).map(lambda t: t.replace("\0", "")), min_size=4, max_size=4),
)
def test_an_answer_field_of_any_bytes_round_trips_and_cannot_forge_another(
    banner: bytes, fields: list[bytes], tail: bytes, texts: list[str]
) -> None:
    for values in (fields, [t.encode("utf-8", "surrogatepass") for t in texts]):
        out = banner + b"\0benchweb-poll\0" + b"".join(v + b"\0" for v in values) + tail

        got, rest = remote.answer_fields(out, "poll", 4)

        assert [g.encode("utf-8", "surrogateescape") for g in got] == values
        assert rest == tail


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.text(any_char, min_size=1, max_size=12))
def test_a_run_directory_with_any_characters_is_made_exactly_or_refused_before_sending(
    conn, tmp_path, name: str
) -> None:
    assume("/" not in name and "\0" not in name and len(name.encode("utf-8", "surrogatepass")) < 200)
    parent = Path(tmp_path) / str(uuid.uuid4())
    parent.mkdir()
    base, run_uuid = f"{parent}/{name}", str(uuid.uuid4())
    note(f"base={base!r}")
    if paths.problem(base, home=True):
        with pytest.raises(remote.RemoteError, match="nothing was sent"):
            remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")
        assert list(parent.iterdir()) == []
        return

    pre = remote.preflight(conn, base, run_uuid, TOOL_CHECK, "")

    resolved = f"{parent}/{name}"
    assert pre.base == resolved and pre.run_dir == f"{resolved}/{run_uuid}"
    assert Path(pre.run_dir).is_dir()
    remote.cleanup(conn, pre.run_dir, None, base=base, run_uuid=run_uuid)
    assert not Path(pre.run_dir).exists()
    assert pre.tool_output == "fio-3.36\n"


def test_two_preflights_of_one_run_at_once_each_read_their_own_tool_check(conn, tmp_path) -> None:
    # A sweep re-sends a launch that waited in the queue, and two attempts check the host at once. With one
    # shared output file the quicker one removed it under the slower, whose tool check came back empty.
    base, run_uuid = str(tmp_path / "runs"), str(uuid.uuid4())
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(remote.preflight, conn, base, run_uuid, "echo fio-slow; sleep 1.5", "")
        time.sleep(0.5)
        quick = pool.submit(remote.preflight, conn, base, run_uuid, "echo fio-quick", "")
        answers = [slow.result(timeout=60), quick.result(timeout=60)]
    assert [(a.tool_status, a.tool_output) for a in answers] == [(0, "fio-slow\n"), (0, "fio-quick\n")]
    assert list(Path(answers[0].run_dir).iterdir()) == []  # each removed its own output


def test_taking_a_launch_leaves_nothing_to_start_and_tells_a_launch_that_came_first(conn, tmp_path) -> None:
    run_dir = tmp_path / "runs" / str(uuid.uuid4())
    run_dir.mkdir(parents=True)
    assert remote.claim_launch(conn, str(run_dir)) is True
    assert (run_dir / "launched").is_dir()
    assert remote.claim_launch(conn, str(run_dir)) is False  # taken: as a launch that came first
    assert remote.claim_launch(conn, str(tmp_path / "gone")) is True  # no directory, nothing can start there
    assert not (tmp_path / "gone").exists()


def test_the_environment_probe_takes_fios_version_from_the_tool_check_instead_of_starting_fio_again(
    conn, fio_installed, tmp_path
) -> None:
    """fio started for --version costs a host some 20 ms of CPU: a launch's preflight starts it once."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "fio-calls"
    bin_dir.mkdir()
    (bin_dir / "fio").write_text(f"#!/bin/sh\necho called >> {shlex.quote(str(calls))}\necho fio-3.99\n")
    (bin_dir / "fio").chmod(0o755)
    check = f"PATH={shlex.quote(str(bin_dir))}:$PATH; command -v fio >/dev/null 2>&1 && fio --version"
    probe = environment.probe_script(str(tmp_path), "directory")

    pre = remote.preflight(conn, f"{tmp_path}/runs", str(uuid.uuid4()), check, "echo end=1", probe)

    assert pre.tool_status == 0 and pre.tool_output.strip() == "fio-3.99"
    assert environment.parse_report(pre.environment_report)["fio"] == "fio-3.99"
    assert calls.read_text() == "called\n"  # once: the environment probe asked no fio of its own
    # Another tool's check (ndisk64's prints its path): the probe asks the fio on the host's PATH itself.
    other = remote.preflight(conn, f"{tmp_path}/runs", str(uuid.uuid4()), "command -v sh", "echo end=1", probe)
    installed = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert environment.parse_report(other.environment_report)["fio"] == installed
    assert calls.read_text() == "called\n"
