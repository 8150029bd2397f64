"""CanvasAgentClient.stream against a real canvasd: replay, live commits,
gestures, reset, clean close, and resumption across a server kill/restart."""

import gc
import time
import unittest

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401  (run with -s clients/python/tests; puts the client on sys.path)

from canvas_client import AuthError, CanvasAgentClient, CanvasConnectionError, NotFoundError

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _support.CanvasdServer().start()


def tearDownModule():
    if SERVER is not None:
        SERVER.cleanup()


WAIT = 20.0  # seconds a test waits for an expected event


def next_event(stream, skip=(), wait=WAIT):
    """Returns the next event whose type is not in skip, failing after wait seconds."""
    deadline = time.monotonic() + wait
    for ev in stream:
        if ev.event not in skip:
            return ev
        if time.monotonic() > deadline:
            raise AssertionError("no event other than %s within %.0fs" % (skip, wait))
    raise AssertionError("stream ended")


def stream_opts():
    # Bounded so that a broken server makes the test fail instead of hanging:
    # a silent connection counts as dropped after 5 s, and every wait loop
    # has a deadline (a reconnect that gets only caught_up resets the backoff).
    return dict(read_timeout=5, reconnect_delay=0.05, max_reconnect_delay=0.5, max_reconnects=10)


class StreamTest(unittest.TestCase):
    def setUp(self):
        self.c = CanvasAgentClient(SERVER.url, token=SERVER.admin_token)
        self.addCleanup(self.c.close)
        self.cid = self.c.create_canvas(title=self._testMethodName)["canvas_id"]

    def create(self, name, base_rev):
        return self.c.apply_result(self.cid, "create_node", {"name": name}, base_rev=base_rev)

    def open(self, last_event_id=None, client=None):
        s = (client or self.c).stream(self.cid, last_event_id=last_event_id, **stream_opts())
        self.addCleanup(s.close)
        return s

    def test_replay_caught_up_then_live_commit(self):
        ids = [self.create("n%d" % i, i).event_id for i in range(3)]
        s = self.open(last_event_id="0")  # an integer revision is a valid Last-Event-ID
        replay = [next(s) for _ in range(3)]
        self.assertEqual([e.event for e in replay], ["canvas_commit"] * 3)
        self.assertEqual([e.data["rev"] for e in replay], [1, 2, 3])
        self.assertEqual([e.id for e in replay], ids)
        self.assertEqual([e.data["args"]["name"] for e in replay], ["n0", "n1", "n2"])
        cu = next(s)
        self.assertEqual(cu.event, "caught_up")
        self.assertEqual(cu.data["head_rev"], 3)
        r = self.create("live", 3)
        ev = next_event(s)
        self.assertEqual((ev.event, ev.id, ev.data["rev"], ev.data["cmd_id"]), ("canvas_commit", r.event_id, 4, r.cmd_id))
        self.assertEqual(ev.data["changes"][0]["op"], "put")

    def test_snapshot_then_stream_is_gap_free(self):
        for i in range(2):
            self.create("n%d" % i, i)
        snap = self.c.get_state(self.cid)
        s = self.open(last_event_id=snap["head_event_id"])
        cu = next(s)
        self.assertEqual((cu.event, cu.data["head_rev"]), ("caught_up", 2), "nothing to replay after the snapshot")
        self.create("after", 2)
        self.assertEqual(next_event(s).data["rev"], 3)

    def test_resume_from_an_event_id(self):
        ids = [self.create("n%d" % i, i).event_id for i in range(4)]
        s = self.open(last_event_id=ids[1])
        self.assertEqual([next(s).data["rev"] for _ in range(2)], [3, 4])
        self.assertEqual(next(s).event, "caught_up")

    def test_gesture_reaches_the_stream_without_id(self):
        s = self.open()
        self.assertEqual(next(s).event, "caught_up")
        self.c.gesture(self.cid, 120, 100, selection=["shape:x"])
        ev = next_event(s)
        self.assertEqual(ev.event, "gesture")
        self.assertIsNone(ev.id)
        self.assertEqual(ev.data["cursor"], {"x": 120, "y": 100})
        self.assertEqual(ev.data["selection"], ["shape:x"])
        self.assertTrue(ev.data["actor_id"])
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 0, "gestures are never stored")

    def test_unresumable_id_yields_reset_and_the_stream_goes_on(self):
        self.create("n0", 0)
        s = self.open(last_event_id="999")
        ev = next(s)
        self.assertEqual(ev.event, "reset")
        self.assertEqual(ev.data["head_rev"], 1)
        self.assertTrue(ev.data.get("reason"))
        self.create("n1", 1)
        ev = next_event(s, skip=("caught_up", "reset"))
        self.assertEqual((ev.event, ev.data["rev"]), ("canvas_commit", 2))

    def test_closing_the_generator_closes_the_connection(self):
        proxy = _support.FaultProxy(SERVER.port)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token)
        s = pc.stream(self.cid, **stream_opts())
        self.assertEqual(next(s).event, "caught_up")
        self.assertFalse(proxy.client_closed.is_set())
        s.close()
        self.assertTrue(proxy.client_closed.wait(5), "the socket was not closed")

    def test_leaving_a_for_loop_closes_the_connection(self):
        proxy = _support.FaultProxy(SERVER.port)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token)
        for ev in pc.stream(self.cid, **stream_opts()):
            self.assertEqual(ev.event, "caught_up")
            break
        gc.collect()
        self.assertTrue(proxy.client_closed.wait(5), "the socket was not closed")

    def test_unreachable_server_backs_off_then_gives_up(self):
        dead = CanvasAgentClient("http://127.0.0.1:%d" % _support.free_port(), token="x")
        delays = []
        dead._sleep = delays.append
        with self.assertRaises(CanvasConnectionError):
            next(dead.stream("c", reconnect_delay=0.1, max_reconnect_delay=0.3, max_reconnects=4))
        self.assertEqual(len(delays), 4)
        for d, cap in zip(delays, (0.1, 0.2, 0.3, 0.3)):
            self.assertTrue(cap / 2 <= d <= cap, delays)

    def test_retry_zero_keeps_the_backoff(self):
        # A server sending "retry: 0" must not turn reconnects into a busy loop.
        proxy = _support.FaultProxy(SERVER.port, actions=["sse_retry0"] * 4)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token)
        delays = []
        pc._sleep = delays.append
        pc._rand = lambda: 1.0  # no jitter
        with self.assertRaises(CanvasConnectionError):
            next(pc.stream(self.cid, reconnect_delay=0.1, max_reconnect_delay=1.0, max_reconnects=3, read_timeout=5))
        self.assertEqual(proxy.connections, 4)
        self.assertEqual(delays, [0.1, 0.2, 0.4])

    def test_a_server_error_reconnects(self):
        # Only 400, 401, 403 and 404 end the stream at once; a 500 is retried.
        proxy = _support.FaultProxy(SERVER.port, actions=["500", "500"])
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token)
        pc._sleep = lambda d: None
        ev = next(pc.stream(self.cid, reconnect_delay=0.01, max_reconnects=5, read_timeout=5))
        self.assertEqual(ev.event, "caught_up")
        self.assertEqual(proxy.connections, 3)

    def test_errors_that_cannot_be_retried_raise(self):
        with self.assertRaises(NotFoundError):
            next(self.c.stream("no-such-canvas", **stream_opts()))
        with self.assertRaises(AuthError):
            next(CanvasAgentClient(SERVER.url, token="bad").stream(self.cid, **stream_opts()))


class ResumeAfterRestartTest(unittest.TestCase):
    """Kills canvasd under an open stream, restarts it on the same port and data
    dir, and checks the stream resumes by itself with no gap and no duplicate."""

    def test_resume_after_kill_and_restart(self):
        srv = _support.CanvasdServer().start()
        self.addCleanup(srv.cleanup)
        c = CanvasAgentClient(srv.url, token=srv.admin_token, backoff=0.05)
        self.addCleanup(c.close)
        cid = c.create_canvas()["canvas_id"]
        for i in range(3):
            c.apply(cid, "create_node", {"name": "before %d" % i}, base_rev=i)

        s = c.stream(cid, last_event_id="0", **stream_opts())
        self.addCleanup(s.close)
        seen = []
        deadline = time.monotonic() + WAIT
        for ev in s:
            self.assertLess(time.monotonic(), deadline)
            if ev.event == "canvas_commit":
                seen.append(ev.data["rev"])
            if ev.event == "caught_up":
                break
        self.assertEqual(seen, [1, 2, 3])

        srv.kill()  # the stream's connection drops
        srv.start()  # same port, same data dir
        c.close()  # forget kept-alive connections to the dead process
        c.apply(cid, "create_node", {"name": "while away 1"}, base_rev=3)
        c.apply(cid, "create_node", {"name": "while away 2"}, base_rev=4)

        # The stream notices the drop, reconnects with Last-Event-ID and
        # replays revs 4 and 5, then goes live.
        got = []
        deadline = time.monotonic() + WAIT
        for ev in s:
            self.assertLess(time.monotonic(), deadline, "resumed stream stalled; got %r" % (got,))
            if ev.event == "canvas_commit":
                got.append(ev.data["rev"])
            elif ev.event == "caught_up":
                self.assertEqual(ev.data["head_rev"], 5)
                c.apply(cid, "create_node", {"name": "live"}, base_rev=5)
            elif ev.event == "reset":
                self.fail("resuming from a known id must not reset: %r" % (ev,))
            if len(got) == 3:
                break
        self.assertEqual(got, [4, 5, 6])
        names = [n["name"] for n in c.get_state(cid)["state"]["nodes"]]
        self.assertEqual(sorted(names), sorted(["before 0", "before 1", "before 2", "while away 1", "while away 2", "live"]))


if __name__ == "__main__":
    unittest.main()
