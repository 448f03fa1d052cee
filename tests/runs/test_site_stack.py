"""Issue 29's first item end to end: with the real `./bw run` stack and its demo target (a private sshd with fio),
a person sets a site on the demo host in a real Chromium, the form says which worker serves it before saving, and
the quick check then runs (its worker serves every site), at desktop and phone width."""

from __future__ import annotations

import re
import shutil

import pytest

from jobs import sshd_local
from tests.browser import PHONE, wait_until
from tests.stacks import free_port, running_stack, stack_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-test-password-1"


@pytest.fixture
def demo_stack(tmp_path):
    if not sshd_local.sshd_available() or shutil.which("fio") is None:
        pytest.skip("the demo target needs sshd and fio (apt-get install openssh-server fio)")
    var_dir, port = tmp_path / "var", free_port()
    env = stack_env(var_dir, port) | {"BENCHWEB_TICK_SECONDS": "1"}
    with running_stack(var_dir, env):
        yield f"http://127.0.0.1:{port}"


def _fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_site_set_on_the_demo_host_is_served_by_the_run_commands_worker_and_the_quick_check_runs(
    demo_stack, browser, page, screenshot
):
    url = demo_stack
    page.goto(f"{url}/signup/")
    page.get_by_label("Username").fill("olga")
    page.locator("#id_password1").fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{url}/")

    page.goto(f"{url}/hosts/")
    page.get_by_role("link", name="local-demo").first.click()
    page.wait_for_url(re.compile(r"/hosts/\d+/$"))
    host_url = page.url
    page.goto(host_url + "edit/")
    hint = page.locator("#id_site_helptext").inner_text()
    assert "For analysis, the Stability card compares the hosts of one site" in hint
    assert "For routing, the host's runs go to queue site.<name>" in hint
    line = page.locator("#site-workers")
    assert re.fullmatch(r"Runs go to queue celery, served by worker-\d+@\S+\.", line.inner_text()), line.inner_text()

    page.locator("#id_site").fill("lab")
    said = line.inner_text()
    assert re.fullmatch(r"Runs go to queue site\.lab; worker-\d+@\S+ serves every site and takes it within "
                        r"seconds\.", said), said  # fmt: skip
    assert line.get_attribute("class") == "hint"
    line.scroll_into_view_if_needed()
    screenshot("form-desktop")
    page.get_by_role("button", name="Save host").click()
    page.wait_for_url(host_url)
    assert page.locator("#site-workers").inner_text().startswith("Runs go to queue site.lab; worker-")

    page.get_by_role("link", name="demo-dir").first.click()
    page.wait_for_url(re.compile(r"/disks/\d+/$"))
    assert "Quick check" in page.locator("#id_profile option:checked").inner_text()
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    wait_until(page, "document.getElementById('status').dataset.final === '1'", timeout_s=120)
    assert page.locator("#run-state").inner_text() == "Succeeded", page.locator("#run-explanation").inner_text()
    screenshot("run-desktop")
    assert page.js_errors == []

    # At phone width, the same person's session: the form and the host page with the served site.
    phone_context = browser.new_context(**PHONE)
    try:
        phone_context.add_cookies(page.context.cookies())
        phone = phone_context.new_page()
        phone.goto(host_url + "edit/")
        assert phone.locator("#site-workers").inner_text().startswith("Runs go to queue site.lab; worker-")
        assert _fits_the_width(phone)
        phone.locator("#site-workers").scroll_into_view_if_needed()
        screenshot("form-phone", on=phone)
        phone.goto(host_url)
        assert _fits_the_width(phone)
        screenshot("host-phone", on=phone)
    finally:
        phone_context.close()
