import threading

from stages import progress


def test_updates_reach_the_installed_sink_from_any_thread_and_stop_after():
    seen = []
    with progress.reporting(lambda done, total, unit, figures: seen.append((done, total, unit, figures))):
        progress.update(1, 3, "epochs", loss=0.5)
        t = threading.Thread(target=progress.update, args=(2, 3, "epochs"))
        t.start()
        t.join()
    progress.update(3, 3, "epochs")
    assert seen == [(1, 3, "epochs", {"loss": 0.5}), (2, 3, "epochs", {})]


def test_sinks_nest_and_the_outer_one_comes_back():
    outer, inner = [], []
    with progress.reporting(lambda *a: outer.append(a[0])):
        with progress.reporting(lambda *a: inner.append(a[0])):
            progress.update(1, None, "edges")
        progress.update(2, None, "edges")
    assert (outer, inner) == ([2], [1])
