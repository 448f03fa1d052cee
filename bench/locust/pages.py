"""The people bench/page_load.py sends at the web server: locust users, each signed in with a session of its own,
browsing as a person does (a page, some seconds reading it, the next): the overview, disk pages and their charts, the
pages of running runs and their live progress, and finished runs. Read by `locust -f` only; its data (session
cookies, disks, runs) comes from the JSON file named by BENCH_PAGES."""

from __future__ import annotations

import itertools
import json
import os
import random

from locust import HttpUser, between, task

DATA = json.loads(open(os.environ["BENCH_PAGES"]).read())
_COOKIES = itertools.cycle(DATA["cookies"])
# Seconds a person reads a page before the next (bench/page_load.py --think).
THINK = tuple(float(part) for part in os.environ.get("BENCH_THINK", "5,15").split(","))


class Person(HttpUser):
    wait_time = between(THINK[0], THINK[1])

    def on_start(self) -> None:
        self.client.cookies.set("sessionid", next(_COOKIES))
        self.rng = random.Random()

    def _get(self, url: str, name: str) -> None:
        with self.client.get(url, name=name, allow_redirects=False, catch_response=True) as answer:
            if answer.status_code != 200:
                answer.failure(f"{url} answered {answer.status_code}")

    @task(3)
    def overview(self) -> None:
        self._get("/overview/", "overview")

    @task(2)
    def disk_page(self) -> None:
        self._get(f"/disks/{self.rng.choice(DATA['disks'])}/", "disk page")

    @task(2)
    def disk_chart(self) -> None:
        self._get(f"/disks/{self.rng.choice(DATA['disks'])}/series.json?range=30d", "disk chart data")

    @task(2)
    def running_run(self) -> None:
        self._get(f"/runs/{self.rng.choice(DATA['running'])}/", "run page (running)")

    @task(3)
    def progress(self) -> None:
        self._get(f"/runs/{self.rng.choice(DATA['running'])}/progress.json", "run progress")

    @task(1)
    def finished_run(self) -> None:
        self._get(f"/runs/{self.rng.choice(DATA['finished'])}/", "run page (finished)")
