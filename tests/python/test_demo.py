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


def _runs(w, runs):
    """Give w the runs of each spec (spec -> list), its results their medians, as measure() does."""
    import statistics
    w.runs = {s: list(v) for s, v in runs.items()}
    w.results = {s: statistics.median(v) for s, v in runs.items()}
    return w


def test_overlapping_ranges_make_a_tie_for_the_fastest():
    w = _runs(_w("fetchadd", {}), {"mutex": [9.0, 10.0, 10.5], "flat": [10.2, 11.0, 12.0],
                                   "tas": [10.4, 10.6, 13.0], "ticket": [1.0, 1.1, 1.2],
                                   "peer:atomic": [20.0, 21.0, 22.0]})
    s = sentence(w, 2)
    assert "flat, tas and mutex are tied for the fastest locus mechanism" in s, s
    assert "flat is tied with mutex (1.10x)" in s, s
    assert "0.52x the best peer (peer:atomic)" in s, s  # apart: a plain ratio
    assert "10.00x the slowest (ticket)" in s, s
    assert "(medians of 3 runs; tied: their ranges overlap)" in s, s


def test_ranges_apart_name_one_fastest():
    w = _runs(_w("fetchadd", {}), {"mutex": [9.0, 10.0, 10.5], "flat": [11.0, 11.5, 12.0]})
    s = sentence(w, 2)
    assert "flat is the fastest locus mechanism; flat is 1.15x mutex" in s, s
    assert "tied" not in s.split("(medians")[0], s


def test_a_tie_with_the_best_peer_is_said():
    w = _runs(_w("fetchadd", {}), {"flat": [10.0, 11.0, 12.0], "peer:atomic": [11.5, 12.5, 13.0]})
    assert "flat is tied with the best peer, peer:atomic (0.88x)" in sentence(w, 2)


def test_locality_tie_between_server_and_in_place():
    w = _runs(_w("locality", {}), {"mutex": [90.0, 100.0, 110.0], "ffwd": [95.0, 98.0, 120.0]})
    assert ("sending the section to a server thread (best: ffwd) and running it in place "
            "(best: mutex) are tied (0.98x)") in sentence(w, 2)


def test_table_marks_rows_tied_with_the_row_above_and_shows_ranges():
    w = _runs(_w("fetchadd", {}), {"mutex": [9.0, 10.0, 10.5], "flat": [10.2, 11.0, 12.0],
                                   "ticket": [1.0, 1.1, 1.2]})
    w.errors["mcs"], w.results["mcs"] = "crashed", None
    lines = table(w).splitlines()
    assert "~ = tied with the row above" in lines[0]
    assert lines[1].split()[-1] == "range"
    flat, mutex, ticket, mcs = lines[2:]
    assert flat.split()[:2] == ["1", "flat"] and "10.20-12.00" in flat
    assert mutex.split()[:2] == ["~2", "mutex"] and "9.00-10.50" in mutex
    assert ticket.split()[:2] == ["3", "ticket"]
    assert "FAIL" in mcs


def test_measure_interleaves_runs_and_takes_the_median():
    """measure() runs A B C A B C, skips a mechanism once it failed, and keeps the median."""
    from locus_tools.bench import Result
    from locus_tools.demo import measure

    class FakeBench:
        def __init__(self):
            self.calls, self.n = [], 0

        def run(self, command, args, duration):
            spec = args[args.index("--mechanisms") + 1]
            self.calls.append(spec)
            self.n += 1
            if spec == "bad":
                return Result(args, 1, [], error="boom")
            return Result(args, 0, [{"mops": float(self.n), "oversubscribed": False}])

    class Quiet:
        def start(self, text):
            pass

        def finish(self, text):
            pass

    w = Workload(title="t", bench="fetchadd", args=[], metric="mops", unit="Mops/s",
                 specs=["a", "bad", "b"])
    fake = FakeBench()
    measure(fake, [w], Quiet(), repeat=3)
    assert fake.calls == ["a", "bad", "b", "a", "b", "a", "b"]
    assert w.runs == {"a": [1.0, 4.0, 6.0], "b": [3.0, 5.0, 7.0]}
    assert w.results == {"a": 4.0, "bad": None, "b": 5.0}
    assert w.errors == {"bad": "boom"}
