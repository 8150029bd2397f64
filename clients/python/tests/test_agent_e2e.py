"""The agent methods against a real canvasd built from this tree, whose agent
talks to a local fake OpenAI-compatible model (FakeOpenAI in _support)."""

import json
import unittest

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401

from canvas_client import CanvasAgentClient, NotFoundError, ValidationError

SERVER = None
MODEL = None

DOC = "def fetch(url):\n    return get(url)\n\nprint(fetch('x'))\n"
EDIT = {"name": "replace_lines", "params": {"node_id": "doc1", "start_line": 2, "end_line": 2,
                                            "new_content": "    return get(url, timeout=5)\n"}}
NOTE = {"name": "create_shape", "params": {"id": "note1", "type": "note", "x": 0, "y": 0, "props": {"text": "hello"}}}


def reply(*actions):
    """A model reply of these actions, streamed in two deltas."""
    text = json.dumps({"actions": list(actions)})
    return [text[:len(text) // 2], text[len(text) // 2:]]


def setUpModule():
    global SERVER, MODEL
    MODEL = _support.FakeOpenAI([reply(EDIT), reply(NOTE)])
    env = MODEL.env()
    env["CANVAS_AGENT_LOW_ACTION_THRESHOLD"] = "0"  # no follow-up turns: one model call per run
    SERVER = _support.CanvasdServer(env=env).start()


def tearDownModule():
    if SERVER is not None:
        SERVER.cleanup()
    if MODEL is not None:
        MODEL.close()


def node(state, node_id):
    return next((n for n in state["state"]["nodes"] if n["id"] == node_id), None)


class AgentTest(unittest.TestCase):
    # The fake model's replies are used in the order the tests run (named so
    # that unittest's alphabetical order is the script's).

    def setUp(self):
        self.c = CanvasAgentClient(SERVER.url, token=SERVER.admin_token, timeout=30)
        self.addCleanup(self.c.close)
        self.cid = self.c.create_canvas(title="agent " + self._testMethodName)["canvas_id"]

    def test_1_run_on_a_document_edits_its_lines(self):
        self.c.apply(self.cid, "create_node", {"id": "doc1", "type": "doc", "props": {"text": DOC, "language": "python"}}, base_rev=0)
        sid = self.c.run_agent(self.cid, "give the get a timeout of 5 s", document="doc1", document_selection=(2, 2))
        sess = self.c.wait_agent(sid, timeout=60)
        self.assertEqual(sess["state"], "done", sess)
        self.assertEqual(sess["document"], "doc1")
        self.assertEqual(sess["document_selection"], {"start_line": 2, "end_line": 2})
        self.assertEqual([x["session_id"] for x in self.c.agent_sessions(self.cid)], [sid])
        text = node(self.c.get_state(self.cid), "doc1")["props"]["text"]
        self.assertEqual(text, DOC.replace("    return get(url)\n", "    return get(url, timeout=5)\n"))
        user = json.dumps(MODEL.requests[0]["messages"][-1])
        self.assertIn("selected line 2", user)

    def test_2_run_on_the_canvas_then_revert(self):
        sid = self.c.run_agent(self.cid, "say hello", viewport={"x": 0, "y": 0, "w": 800, "h": 600})
        sess = self.c.wait_agent(sid, timeout=60)
        self.assertEqual(sess["state"], "done", sess)
        notes = [n for n in self.c.get_state(self.cid)["state"]["nodes"] if n["type"] == "note"]
        self.assertEqual([n["props"]["text"] for n in notes], ["hello"])  # its id is the server's (ag:...)
        r = self.c.revert_agent_turns(sid)
        self.assertGreater(r["current_rev"], 1)
        self.assertEqual(self.c.get_state(self.cid)["state"]["nodes"], [], "the reverted note is gone")

    def test_3_bad_runs_are_refused(self):
        self.c.apply(self.cid, "create_node", {"id": "box", "name": "a shape"}, base_rev=0)
        calls = len(MODEL.requests)
        with self.assertRaises(NotFoundError):
            self.c.run_agent(self.cid, "x", document="nope")
        with self.assertRaises(ValidationError) as e:
            self.c.run_agent(self.cid, "x", document="box")
        self.assertEqual(e.exception.status, 422)
        with self.assertRaises(ValidationError):
            self.c.run_agent(self.cid, "x", document_selection=(1, 1))  # a selection needs a document
        with self.assertRaises(NotFoundError):
            self.c.agent_session("as_missing")
        with self.assertRaises(ValidationError):
            self.c.agent_sessions(self.cid, limit=0)
        self.assertEqual(self.c.agent_sessions(self.cid), [], "refused runs leave no session")
        self.assertEqual(len(MODEL.requests), calls, "no refused run reached the model")

    def test_4_catalog(self):
        names = json.dumps(self.c.agent_catalog())
        for verb in ("create_shape", "replace_lines"):
            self.assertIn(verb, names)


if __name__ == "__main__":
    unittest.main()
