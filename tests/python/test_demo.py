"""The demo's ranking and sentences, on made-up results (the demo itself takes a minute)."""

from locus_tools.demo import Workload, ranked, sentence, table


def _w(bench, results, oversub=()):
    w = Workload(title="fetch-and-add on 1 counter with 2 threads", bench=bench, args=[],
                 metric="mops", unit="Mops/s", specs=list(results))
    w.results = dict(results)
    w.oversubscribed = {s: s in oversub for s in results}
    return w


def test_ranking_puts_failures_last():
    w = _w("fetchadd", {"mutex": 10.0, "ticket": None, "flat": 11.2, "peer:atomic": 20.0})
    assert ranked(w) == [("peer:atomic", 20.0), ("flat", 11.2), ("mutex", 10.0), ("ticket", None)]


def test_sentence_compares_best_with_mutex_best_peer_and_slowest():
    w = _w("fetchadd", {"mutex": 10.0, "ticket": 1.0, "flat": 11.2, "peer:atomic": 20.0,
                        "mcs": None})
    s = sentence(w, 2)
    assert s.startswith("On this machine (2 CPUs), fetch-and-add on 1 counter with 2 threads: ")
    assert "flat is the fastest locus mechanism" in s
    assert "flat is 1.12x mutex" in s
    assert "0.56x the best peer (peer:atomic)" in s
    assert "11.20x the slowest (ticket)" in s
    assert "mcs failed" in s


def test_locality_sentence_weighs_server_against_in_place():
    w = _w("locality", {"mutex": 100.0, "clh": 120.0, "ffwd": 60.0, "mpsc": 30.0})
    s = sentence(w, 2)
    assert "clh is 1.20x mutex" in s
    assert "a server thread (best: ffwd) is 0.50x running it in place (best: clh)" in s


def test_nothing_measured_is_said_plainly():
    assert "no locus mechanism could be measured" in sentence(_w("fetchadd", {"mutex": None}), 2)


def test_table_marks_oversubscribed_and_fail():
    text = table(_w("fetchadd", {"mutex": 10.0, "async": 12.0, "mcs": None}, oversub=("async",)))
    lines = text.splitlines()
    assert "async" in lines[2] and "12.00*" in lines[2] and "1.20x" in lines[2]
    assert "mcs" in lines[-1] and "FAIL" in lines[-1]
