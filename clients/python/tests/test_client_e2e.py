"""CanvasAgentClient against a real canvasd built from this tree."""

import re
import threading
import unittest
import uuid

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401  (run with -s clients/python/tests; puts the client on sys.path)

from canvas_client import (
    ApplyResult,
    AuthError,
    CanvasAgentClient,
    CanvasConnectionError,
    CanvasError,
    ConflictError,
    NotFoundError,
    ServerError,
    ValidationError,
)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _support.CanvasdServer().start()


def tearDownModule():
    if SERVER is not None:
        SERVER.cleanup()


class E2E(unittest.TestCase):
    def setUp(self):
        self.c = CanvasAgentClient(SERVER.url, token=SERVER.admin_token, timeout=10)
        self.addCleanup(self.c.close)
        self.cid = self.c.create_canvas(title="test " + self._testMethodName)["canvas_id"]

    def node(self, name, **extra):
        """Creates a node at head and returns (rev, id)."""
        head = self.c.get_state(self.cid)["head_rev"]
        args = {"name": name, "transform": {"x": 10, "y": 20, "w": 100, "h": 50}}
        args.update(extra)
        r = self.c.apply_result(self.cid, "create_node", args, base_rev=head)
        self.assertEqual(len(r.created_ids), 1, r)
        return r.rev, r.created_ids[0]

    def names(self, state=None):
        state = state or self.c.get_state(self.cid)
        return {n["id"]: n["name"] for n in state["state"]["nodes"]}


class CanvasesTest(E2E):
    def test_create_get_list_and_duplicate(self):
        info = self.c.get_canvas(self.cid)
        self.assertEqual(info["canvas_id"], self.cid)
        self.assertEqual(info["head_rev"], 0)
        self.assertIn(self.cid, [x["canvas_id"] for x in self.c.list_canvases()])

        own = "py-" + uuid.uuid4().hex[:12]
        made = self.c.create_canvas(own, title="mine")
        self.assertEqual((made["canvas_id"], made["title"], made["head_rev"]), (own, "mine", 0))
        with self.assertRaises(ConflictError) as cm:
            self.c.create_canvas(own)
        self.assertEqual(cm.exception.status, 409)
        self.assertIsNone(cm.exception.current_rev, "not a command conflict")
        self.assertTrue(cm.exception.detail)

    def test_delete_canvas(self):
        other = self.c.create_canvas()["canvas_id"]
        self.c.delete_canvas(other)
        with self.assertRaises(NotFoundError):
            self.c.get_state(other)
        self.assertNotIn(other, [x["canvas_id"] for x in self.c.list_canvases()])

    def test_snapshot_of_new_canvas_and_not_found(self):
        s = self.c.get_state(self.cid)
        self.assertEqual(s["canvas_id"], self.cid)
        self.assertEqual(s["head_rev"], 0)
        self.assertEqual(s["state"]["nodes"], [])
        self.assertEqual(s["state"]["edges"], [])
        with self.assertRaises(NotFoundError) as cm:
            self.c.get_state("no-such-canvas-" + uuid.uuid4().hex)
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(cm.exception.problem["status"], 404)


class ApplyTest(E2E):
    def test_apply_returns_new_revision_and_state_shows_it(self):
        rev = self.c.apply(self.cid, "create_node", {"name": "Idea", "transform": {"x": 1, "y": 2}}, base_rev=0)
        self.assertEqual(rev, 1)
        s = self.c.get_state(self.cid)
        self.assertEqual(s["head_rev"], 1)
        self.assertEqual([n["name"] for n in s["state"]["nodes"]], ["Idea"])
        self.assertEqual((s["state"]["nodes"][0]["x"], s["state"]["nodes"][0]["y"]), (1, 2))
        rev2 = self.c.apply(self.cid, "update_node", {"id": s["state"]["nodes"][0]["id"], "name": "Better"}, base_rev=1)
        self.assertEqual(rev2, 2)
        self.assertEqual(list(self.names().values()), ["Better"])
        # time travel
        self.assertEqual(list(self.names(self.c.get_state(self.cid, at_rev=1)).values()), ["Idea"])

    def test_apply_result_fields(self):
        r = self.c.apply_result(self.cid, "create_node", {"id": "shape:fixed", "name": "A"}, base_rev=0)
        self.assertIsInstance(r, ApplyResult)
        self.assertEqual(r.rev, 1)
        self.assertEqual(r.created_ids, ["shape:fixed"])
        self.assertTrue(r.event_id)
        self.assertTrue(r.cmd_id)
        self.assertFalse(r.replayed)
        self.assertTrue(r.idempotency_key)

    def test_stale_base_rev_without_overlap_is_rebased(self):
        _, a = self.node("A")
        rev_b, b = self.node("B")
        r = self.c.apply_result(self.cid, "update_node", {"id": a, "name": "A2"}, base_rev=1)
        self.assertEqual(r.rev, rev_b + 1)
        self.assertTrue(r.rebased)
        with self.assertRaises(ConflictError):
            self.c.apply(self.cid, "update_node", {"id": b, "name": "B2"}, base_rev=1, strict=True)


class ConflictTest(E2E):
    def make_conflict(self):
        """A at rev 1, then someone renames A at rev 2; returns A's id."""
        rev, a = self.node("A")
        self.assertEqual(rev, 1)
        self.assertEqual(self.c.apply(self.cid, "update_node", {"id": a, "name": "A by other"}, base_rev=1), 2)
        return a

    def test_conflict_error_fields(self):
        a = self.make_conflict()
        with self.assertRaises(ConflictError) as cm:
            self.c.apply(self.cid, "update_node", {"id": a, "name": "A by me"}, base_rev=1, idempotency_key="k-" + a)
        e = cm.exception
        self.assertEqual(e.status, 409)
        self.assertEqual(e.current_rev, 2)
        self.assertEqual(e.base_rev, 1)
        self.assertEqual(e.conflicting_ids, [a])
        self.assertEqual([op["rev"] for op in e.recovery_ops], [2])
        self.assertEqual(e.recovery_ops[0]["type"], "update_node")
        self.assertEqual(e.recovery_ops[0]["args"]["name"], "A by other")
        self.assertFalse(e.recovery_ops_incomplete)
        self.assertEqual(e.problem["status"], "conflict")
        self.assertTrue(e.suggestion)
        self.assertEqual(e.idempotency_key, "k-" + a)
        self.assertIn("409", str(e))
        self.assertEqual(self.names()[a], "A by other", "a conflict writes nothing")

    def test_on_conflict_replans_with_fresh_state(self):
        a = self.make_conflict()
        seen = []

        def replan(conflict, fresh):
            seen.append((conflict.current_rev, conflict.conflicting_ids, fresh["head_rev"], self.names(fresh)[a]))
            return "update_node", {"id": a, "name": fresh_name(fresh)}

        def fresh_name(fresh):
            return self.names(fresh)[a] + " + mine"

        r = self.c.apply_result(self.cid, "update_node", {"id": a, "name": "A by me"}, base_rev=1,
                                idempotency_key="mykey", on_conflict=replan)
        self.assertEqual(seen, [(2, [a], 2, "A by other")])
        self.assertEqual(r.rev, 3)
        self.assertEqual(r.replans, 1)
        self.assertNotEqual(r.idempotency_key, "mykey", "a replanned command is a new command with a new key")
        self.assertEqual(self.names()[a], "A by other + mine")
        # A 409 wrote nothing, so nothing was stored under the first key: the
        # same envelope is decided again (and conflicts again, at today's head).
        with self.assertRaises(ConflictError) as cm:
            self.c.apply(self.cid, "update_node", {"id": a, "name": "A by me"}, base_rev=1, idempotency_key="mykey")
        self.assertEqual(cm.exception.current_rev, 3)
        self.assertNotIn("idempotent-replayed", cm.exception.headers)
        # Repeating the whole call with the same key never applies twice: the
        # replanned command's key (derived from "mykey") is taken, so the
        # server refuses the new (different) replanned envelope.
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "update_node", {"id": a, "name": "A by me"}, base_rev=1,
                         idempotency_key="mykey", on_conflict=replan)
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(cm.exception.problem.get("field"), "idempotency_key")
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 3)

    def test_on_conflict_gives_up_after_max_retries(self):
        a = self.make_conflict()
        calls = []

        def replan(conflict, fresh):
            calls.append(fresh["head_rev"])
            # Someone else changes A again before our retry lands.
            self.c.apply(self.cid, "update_node", {"id": a, "name": "other %d" % len(calls)}, base_rev=fresh["head_rev"])
            return "update_node", {"id": a, "name": "mine"}

        with self.assertRaises(ConflictError) as cm:
            self.c.apply(self.cid, "update_node", {"id": a, "name": "mine"}, base_rev=1, on_conflict=replan, max_retries=2)
        self.assertEqual(calls, [2, 3])
        self.assertEqual(cm.exception.current_rev, 4)
        self.assertEqual(cm.exception.conflicting_ids, [a])
        self.assertEqual(self.names()[a], "other 2")

    def test_on_conflict_returning_none_raises(self):
        a = self.make_conflict()
        with self.assertRaises(ConflictError):
            self.c.apply(self.cid, "update_node", {"id": a, "name": "x"}, base_rev=1, on_conflict=lambda c, s: None)
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 2)

    def test_concurrent_read_modify_write_loses_no_update(self):
        # Threads sharing one client increment a counter in one node's props
        # (props.meta: the client's own data) by read-modify-write;
        # on_conflict re-plans from the fresh state.
        rev, a = self.node("counter", props={"meta": {"count": 0}})
        errors = []

        def count_of(state):
            return next(n for n in state["state"]["nodes"] if n["id"] == a)["props"]["meta"]["count"]

        def replan(conflict, fresh):
            return "update_node", {"id": a, "props": {"meta": {"count": count_of(fresh) + 1}}}

        def worker():
            try:
                for _ in range(5):
                    s = self.c.get_state(self.cid)
                    self.c.apply(self.cid, "update_node", {"id": a, "props": {"meta": {"count": count_of(s) + 1}}},
                                 base_rev=s["head_rev"], on_conflict=replan, max_retries=100)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        s = self.c.get_state(self.cid)
        self.assertEqual(count_of(s), 20)
        self.assertEqual(s["head_rev"], rev + 20)

    def test_base_rev_ahead_of_head_is_a_conflict(self):
        with self.assertRaises(ConflictError) as cm:
            self.c.apply(self.cid, "create_node", {"name": "x"}, base_rev=5)
        self.assertEqual(cm.exception.current_rev, 0)

    def test_deleted_node_is_a_conflict_for_a_stale_writer(self):
        _, a = self.node("A")
        self.c.apply(self.cid, "delete_node", {"id": a}, base_rev=1)
        with self.assertRaises(ConflictError) as cm:
            self.c.apply(self.cid, "update_node", {"id": a, "name": "ghost"}, base_rev=1)
        self.assertEqual(cm.exception.conflicting_ids, [a])
        self.assertEqual(cm.exception.recovery_ops[0]["type"], "delete_node")


class IdempotencyTest(E2E):
    def test_same_key_same_revision_replayed(self):
        args = {"name": "Once", "transform": {"x": 5, "y": 5}}
        r1 = self.c.apply_result(self.cid, "create_node", args, base_rev=0, idempotency_key="idem-1")
        r2 = self.c.apply_result(self.cid, "create_node", args, base_rev=0, idempotency_key="idem-1")
        self.assertEqual((r1.rev, r1.replayed), (1, False))
        self.assertEqual((r2.rev, r2.replayed), (1, True))
        self.assertEqual(r2.created_ids, r1.created_ids)
        self.assertEqual(r2.event_id, r1.event_id)
        s = self.c.get_state(self.cid)
        self.assertEqual(s["head_rev"], 1)
        self.assertEqual(len(s["state"]["nodes"]), 1)
        # The same key with a different envelope is refused.
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "create_node", {"name": "Other"}, base_rev=0, idempotency_key="idem-1")
        self.assertEqual(cm.exception.status, 422)

    def test_lost_response_is_retried_with_the_same_key(self):
        # The proxy forwards the command, the server applies it, and the
        # proxy drops the answer: the client must resend the same envelope.
        proxy = _support.FaultProxy(SERVER.port, actions=["drop_response"])
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token, timeout=10, backoff=0.01)
        self.addCleanup(pc.close)
        r = pc.apply_result(self.cid, "create_node", {"name": "Lost answer"}, base_rev=0)
        self.assertEqual(r.rev, 1)
        self.assertTrue(r.replayed, "the retry must be answered from the idempotency store")
        s = self.c.get_state(self.cid)
        self.assertEqual(s["head_rev"], 1, "exactly one commit")
        self.assertEqual(len(s["state"]["nodes"]), 1)
        sent = b"".join(proxy.requests)
        self.assertEqual(sent.count(r.idempotency_key.encode()), 2, "both attempts carried the same key")

    def test_503_is_retried_with_backoff(self):
        proxy = _support.FaultProxy(SERVER.port, actions=["503", "503"])
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token, timeout=10, backoff=0.01)
        delays = []
        pc._sleep = delays.append
        self.addCleanup(pc.close)
        r = pc.apply_result(self.cid, "create_node", {"name": "after 503"}, base_rev=0)
        self.assertEqual((r.rev, r.replayed), (1, False))
        self.assertEqual(len(delays), 2)
        self.assertTrue(0.005 <= delays[0] < 0.01 and 0.01 <= delays[1] < 0.02, delays)
        sent = b"".join(proxy.requests)
        self.assertEqual(sent.count(b"POST /canvas_commands/"), 3)
        self.assertEqual(set(re.findall(rb'"idempotency_key":"([^"]+)"', sent)), {r.idempotency_key.encode()})

    def test_503_retries_are_bounded(self):
        proxy = _support.FaultProxy(SERVER.port, actions=["503"] * 5)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token, retries=2, backoff=0.001)
        self.addCleanup(pc.close)
        with self.assertRaises(ServerError) as cm:
            pc.apply(self.cid, "create_node", {"name": "never"}, base_rev=0)
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual(cm.exception.retry_after, 0.0)
        self.assertEqual(len(proxy.requests), 3)
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 0)

    def test_503_of_a_write_without_key_is_not_retried(self):
        # Deleting carries no idempotency key: after a 503 it may have
        # happened, so the client must not send it again on its own.
        proxy = _support.FaultProxy(SERVER.port, actions=["503"] * 5)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token, retries=3, backoff=0.001)
        self.addCleanup(pc.close)
        with self.assertRaises(ServerError) as cm:
            pc.delete_canvas(self.cid)
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual(len(proxy.requests), 1, "a write without a key is sent once")

    def test_unreachable_server_raises_connection_error(self):
        dead = CanvasAgentClient("http://127.0.0.1:%d" % _support.free_port(), token="x", retries=1, backoff=0.001)
        with self.assertRaises(CanvasConnectionError) as cm:
            dead.get_state("c")
        self.assertIsInstance(cm.exception, ConnectionError)
        self.assertIsInstance(cm.exception, CanvasError)


class PathEscapingTest(E2E):
    def test_ids_are_escaped_once_and_only_where_needed(self):
        # ':' and '@' may stand in a path segment as they are; '/', '?', '#',
        # '%', spaces and non-ASCII are escaped, once.
        proxy = _support.FaultProxy(SERVER.port)
        self.addCleanup(proxy.close)
        pc = CanvasAgentClient(proxy.url, token=SERVER.admin_token)
        self.addCleanup(pc.close)
        cid = "team:" + uuid.uuid4().hex[:8]
        pc.create_canvas(cid)
        self.assertEqual(pc.get_canvas(cid)["canvas_id"], cid)
        self.assertEqual(pc.get_state(cid)["canvas_id"], cid)
        actors = {
            "alice@example.com": "alice@example.com",
            "a/b": "a%2Fb",
            "carol smith": "carol%20smith",
            "50%off": "50%25off",
            "q?#x": "q%3F%23x",
            "h\u00e9ctor": "h%C3%A9ctor",
            "(o'k)!*+,;=$&": "(o'k)!*+,;=$&",
        }
        for actor in actors:
            with self.subTest(actor=actor):
                tok = pc.create_token("editor", "human", actor_id=actor)
                self.assertEqual(tok["actor_id"], actor)
                pc.revoke_token(actor)
                with self.assertRaises(AuthError):
                    CanvasAgentClient(SERVER.url, token=tok["token"]).list_canvases()
                with self.assertRaises(NotFoundError):
                    pc.revoke_token(actor)
        sent = [(m.decode(), p.decode()) for m, p in re.findall(rb"([A-Z]+) (/\S*) HTTP/1\.1\r\n", b"".join(proxy.requests))]
        self.assertIn(("GET", "/api/canvases/" + cid), sent)
        self.assertIn(("GET", "/canvas_commands/snapshot/" + cid), sent)
        for seg in actors.values():
            self.assertIn(("DELETE", "/api/tokens/" + seg), sent)


class BatchTest(E2E):
    def test_batch_applies_all_one_revision_each(self):
        out = self.c.apply_batch(self.cid, [
            ("create_node", {"id": "shape:a", "name": "a"}),
            ("create_node", {"id": "shape:b", "name": "b"}),
            {"type": "create_edge", "args": {"from": "shape:a", "to": "shape:b"}},
        ], base_rev=0)
        self.assertEqual(out["status"], "applied")
        self.assertEqual(out["current_rev"], 3)
        self.assertEqual(len(out["results"]), 3)
        s = self.c.get_state(self.cid)
        self.assertEqual(s["head_rev"], 3)
        self.assertEqual(len(s["state"]["edges"]), 1)
        self.assertEqual([c["rev"] for c in self.c.events(self.cid)["commits"]], [1, 2, 3])

    def test_batch_is_all_or_nothing(self):
        with self.assertRaises(ValidationError) as cm:
            self.c.apply_batch(self.cid, [
                ("create_node", {"name": "fine"}),
                ("update_node", {"id": "shape:missing", "name": "x"}),
            ], base_rev=0)
        self.assertIn(cm.exception.status, (400, 422))
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 0)

    def test_batch_replay_with_same_key(self):
        cmds = [("create_node", {"name": "one"}), ("create_node", {"name": "two"})]
        first = self.c.apply_batch(self.cid, cmds, base_rev=0, idempotency_key="batch-1")
        again = self.c.apply_batch(self.cid, cmds, base_rev=0, idempotency_key="batch-1")
        self.assertEqual(first, again)
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 2)


class EventsTest(E2E):
    def test_paging_and_iterating(self):
        for i in range(7):
            self.c.apply(self.cid, "create_node", {"name": "n%d" % i}, base_rev=i)
        page = self.c.events(self.cid, after_rev=0, limit=3)
        self.assertEqual(page["head_rev"], 7)
        self.assertEqual([c["rev"] for c in page["commits"]], [1, 2, 3])
        c1 = page["commits"][0]
        for k in ("event_id", "rev", "cmd_id", "type", "args", "actor_id", "actor_type", "ts", "changes"):
            self.assertIn(k, c1)
        self.assertEqual(c1["type"], "create_node")
        self.assertEqual(c1["changes"][0]["op"], "put")
        self.assertEqual([c["rev"] for c in self.c.events(self.cid, after_rev=5, limit=3)["commits"]], [6, 7])
        self.assertEqual(self.c.events(self.cid, after_rev=7)["commits"], [])
        self.assertEqual([c["rev"] for c in self.c.iter_events(self.cid, page_size=3)], list(range(1, 8)))
        self.assertEqual([c["rev"] for c in self.c.iter_events(self.cid, after_rev=4, page_size=2)], [5, 6, 7])


class AuthTest(E2E):
    def test_missing_and_bad_tokens_are_401(self):
        for token in (None, "not-a-token"):
            with self.subTest(token=token):
                anon = CanvasAgentClient(SERVER.url, token=token)
                with self.assertRaises(AuthError) as cm:
                    anon.get_state(self.cid)
                self.assertEqual(cm.exception.status, 401)
                self.assertTrue(cm.exception.detail)
                with self.assertRaises(AuthError):
                    anon.apply(self.cid, "create_node", {"name": "x"}, base_rev=0)
                with self.assertRaises(AuthError):
                    next(anon.stream(self.cid))
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 0)

    def test_viewer_cannot_write_and_scoped_token_sees_only_its_canvas(self):
        tok = self.c.create_token("viewer", "agent", canvases=[self.cid])
        self.assertTrue(tok["actor_id"].startswith("agent-"), tok)
        viewer = CanvasAgentClient(SERVER.url, token=tok["token"])
        self.assertEqual(viewer.get_state(self.cid)["head_rev"], 0)
        with self.assertRaises(AuthError) as cm:
            viewer.apply(self.cid, "create_node", {"name": "x"}, base_rev=0)
        self.assertEqual(cm.exception.status, 403)
        other = self.c.create_canvas()["canvas_id"]
        with self.assertRaises(AuthError) as cm:
            viewer.get_state(other)
        self.assertEqual(cm.exception.status, 403)
        self.assertEqual([x["canvas_id"] for x in viewer.list_canvases()], [self.cid])

    def test_editor_token_writes_as_its_actor_and_revoked_token_fails(self):
        tok = self.c.create_token("editor", "agent")
        ed = CanvasAgentClient(SERVER.url, token=tok["token"])
        self.assertEqual(ed.apply(self.cid, "create_node", {"name": "by agent"}, base_rev=0), 1)
        commit = self.c.events(self.cid)["commits"][0]
        self.assertEqual((commit["actor_id"], commit["actor_type"]), (tok["actor_id"], "agent"))
        self.c.revoke_token(tok["actor_id"])
        with self.assertRaises(AuthError) as cm:
            ed.get_state(self.cid)
        self.assertEqual(cm.exception.status, 401)


class ValidationTest(E2E):
    def test_unprocessable_command_carries_the_problem(self):
        self.node("A")
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "align", {"ids": ["shape:nope"], "alignment": "diagonal"}, base_rev=1)
        e = cm.exception
        self.assertEqual(e.status, 422)
        self.assertEqual(e.problem["status"], 422)
        for k in ("type", "title", "detail"):
            self.assertTrue(e.problem.get(k), k)
        self.assertTrue(e.headers["content-type"].startswith("application/problem+json"))
        self.assertIn("args.", e.detail)
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 1, "nothing written")

    def test_unknown_node_is_422_naming_the_field(self):
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "update_node", {"id": "shape:missing", "name": "x"}, base_rev=0)
        self.assertEqual(cm.exception.status, 422)
        self.assertIn("args.id", cm.exception.detail)
        self.assertEqual(cm.exception.field, "args.id")

    def test_malformed_envelope_is_400(self):
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "create_node", {"name": "x"}, base_rev=-1)
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("base_rev", cm.exception.detail)

    def test_too_large_is_413_with_the_limit(self):
        with self.assertRaises(ValidationError) as cm:
            self.c.apply(self.cid, "create_node", {"name": "big", "props": {"text": "x" * (1 << 20)}}, base_rev=0)
        self.assertEqual(cm.exception.status, 413)
        self.assertRegex(cm.exception.detail, r"\d")
        self.assertEqual(self.c.get_state(self.cid)["head_rev"], 0)


if __name__ == "__main__":
    unittest.main()
