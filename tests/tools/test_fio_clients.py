"""fio's client/server output read as one result a client beside fio's "All clients" total (jobs/tools/fio_clients.py
and the JSON and text parsers), on the outputs recorded from fio 3.33 servers on loopback (tests/fixtures/clients/)
and the ones derived or built from them; each number is the one fio printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.tools import detect, fio_clients

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"


def _run(name: str) -> fio_clients.ClientRun:
    text = (CLIENTS / name).read_text()
    run = fio_clients.client_run(detect.parse_all(text), client_output='"client_stats"' in text)
    assert run is not None
    return run


def test_each_client_of_the_json_is_one_result_with_the_figures_fio_printed_for_it() -> None:
    run = _run("fio-3.33-two-clients.json")

    assert [(c.number, c.host, c.label) for c in run.clients] == [
        (1, "127.0.0.2", "client 127.0.0.2"), (2, "127.0.0.1", "client 127.0.0.1")
    ]  # fmt: skip
    first = run.clients[0].result.summary
    assert first["printed"]["read"] == {"iops": "14144.855145", "bw": "56579 KiB/s", "bw_alt": "57937326 B/s",
                                        "runtime": "1001 ms"}  # fmt: skip
    assert first["read"]["iops"] == pytest.approx(14144.855145, abs=1e-6)  # 14159 I/Os in 1001 ms
    assert first["runtime_s"] == 1.001 and first["processes"] == 1
    assert run.fio_total is not None and run.fio_total.summary["printed"]["read"]["iops"] == "28214.785215"
    assert run.groups == 1


def test_json_plus_keeps_each_clients_bins_and_percentiles_as_fio_printed_them() -> None:
    run = _run("fio-3.33-two-clients-jsonplus.json")

    first = run.clients[0].result
    assert first.latency_bins and first.summary["read"]["clat_us"]["p99"] == 99.84  # "99.000000" : 99840 (ns)
    assert run.clients[1].result.summary["read"]["clat_us"]["p99"] == 104.96
    # "All clients" prints no percentiles in 3.33 (3.39 added them): none are made up.
    assert run.fio_total is not None and run.fio_total.summary["read"]["clat_us"]["p99"] is None


def test_several_jobs_a_client_are_one_result_a_client_and_fios_total_is_kept_apart() -> None:
    run = _run("fio-3.33-three-clients-two-jobs.json")

    assert [c.host for c in run.clients] == ["127.0.0.3", "127.0.0.2", "127.0.0.1"]
    first = run.clients[0].result.summary
    # Jobs a and b of 127.0.0.3: 17898 + 17696 reads in 2001 ms each.
    assert first["read"]["iops"] == pytest.approx((17898 + 17696) / 2.001, rel=1e-12)
    assert first["processes"] == 2 and first["workload"]["read_percent"] == 70.0
    assert run.fio_total is not None and run.fio_total.summary["printed"]["read"]["iops"] == "52387.643249"
    clients_sum = sum(c.result.summary["total"]["iops"] for c in run.clients)
    fio_iops = run.fio_total.summary["total"]["iops"]
    assert fio_iops == pytest.approx((105142 + 45087) / 2.007, rel=1e-12)  # every I/O over the longest runtime
    said = fio_clients.total_comparison(fio_iops, clients_sum, 2.007)
    assert said.startswith("fio's “All clients” total is 0.25 % below the sum of the clients")


def test_the_text_report_numbers_its_clients_in_the_order_printed_with_fios_printed_figures() -> None:
    run = _run("fio-3.33-three-clients-two-jobs.txt")

    assert [(c.number, c.host) for c in run.clients] == [(1, None), (2, None), (3, None)]
    assert run.fio_total is not None
    assert run.fio_total.summary["printed"]["read"] == {"iops": "51.8k", "bw": "202Mi", "bw_alt": "212M",
                                                        "runtime": "2001msec"}  # fmt: skip
    assert "numbered in the order printed" in run.clients[0].result.diagnostics[-1]
    two = _run("fio-3.33-two-clients.txt")
    assert [c.result.summary["printed"]["read"]["iops"] for c in two.clients] == ["18.2k", "18.2k"]


def test_fio_3_43s_global_options_given_once_a_client_are_each_clients_options() -> None:
    run = _run("built-fio-3.43-two-clients.json")

    for client in run.clients:
        assert client.result.summary["workload"]["rw"] == "randread"
        assert client.result.summary["block_size_bytes"] == 4096 and client.result.settings["runtime"] == "1"
    assert run.clients[0].result.summary["tool_version"] == "3.43"


def test_without_host_names_each_entry_is_a_client_in_fios_order_and_it_says_so() -> None:
    run = _run("derived-two-clients-no-host-names.json")

    assert [(c.label, c.host) for c in run.clients] == [("client 1", None), ("client 2", None)]
    assert run.clients[0].result.summary["read"]["iops"] == pytest.approx(14144.855145, abs=1e-6)
    assert "fio#515" in run.clients[0].result.diagnostics[0]


def test_without_fios_total_there_is_none_and_a_one_client_output_is_one_client() -> None:
    assert _run("derived-three-clients-no-all-clients.json").fio_total is None
    once = _run("fio-3.33-job-file-given-once.json")  # fio ran the job file on the last --client only
    assert len(once.clients) == 1 and once.clients[0].host is None and once.fio_total is None


def test_an_output_of_one_fio_is_no_client_run_and_equal_totals_agree() -> None:
    single = (CLIENTS.parent / "fio-3.33-randrw.json").read_text()
    assert fio_clients.client_run(detect.parse_all(single), client_output=False) is None
    assert fio_clients.total_comparison(100.0, 100.04, 1.0) == (
        "fio's “All clients” total and the sum of the clients agree."
    )
    assert fio_clients.total_comparison(None, 100.0, 1.0) == ""
