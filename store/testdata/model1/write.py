"""Wrote this directory's canvas with canvasd at commit 50335a4 (model 1: free-form props).

Run against that server (`canvasd serve --snapshot-every 7`, admin token dev-token, on
127.0.0.1:18080); canvasd.db is its data directory's store afterwards, commits.jsonl the
canvas's log (GET .../events) and snapshot.json its state. The migration tests load them.
Kept so that the fixture can be told apart from what the current code would write: do not
regenerate it with a newer canvasd.
"""
import json, urllib.request
B="http://127.0.0.1:18080"; T="dev-token"; C="v1model"
def req(method, path, body=None):
    r=urllib.request.Request(B+path, method=method, data=None if body is None else json.dumps(body).encode(), headers={"Authorization":"Bearer "+T,"Content-Type":"application/json"})
    try:
        with urllib.request.urlopen(r) as f: return json.loads(f.read() or b"null")
    except urllib.error.HTTPError as e:
        print("ERR", e.code, e.read().decode()); raise
req("POST","/api/canvases",{"canvas_id":C,"title":"written by model 1"})
rev=0
def cmd(t,args):
    global rev
    res=req("POST",f"/canvas_commands/{C}/command",{"type":t,"base_rev":rev,"args":args})
    rev=res["current_rev"]; return res
cmd("create_shape",{"id":"a","type":"geo","x":0,"y":0,"w":120,"h":80,"props":{"geo":"rectangle","color":"blue","fill":"solid","text":"A"}})
cmd("create_shape",{"id":"b","type":"geo","x":400,"y":0,"w":120,"h":80,"props":{"geo":"ellipse","color":"red","fill":"tint","size":"xxl","dash":"wavy"}})
cmd("create_shape",{"id":"c","type":"geo","x":0,"y":300,"w":160,"h":90,"props":{"geo":"pill","text":"pill"}})
cmd("create_shape",{"id":"n1","type":"note","x":600,"y":300,"props":{"color":"yellow","text":"a note","richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"rich"}]}]}}})
cmd("create_shape",{"id":"t1","type":"text","x":0,"y":-100,"props":{"text":"Title","size":"xl","font":"sans","align":"middle","verticalAlign":"middle"}})
# arrow node bound the web UI way
cmd("create_shape",{"id":"arr1","type":"arrow","x":120,"y":40,"w":280,"h":1,"props":{"color":"black","start":{"x":0,"y":0},"end":{"x":280,"y":0},"start_binding":"a","end_binding":"b","text":"calls"}})
# arrow node bound the lint's boundShapeId way
cmd("create_shape",{"id":"arr2","type":"arrow","x":60,"y":80,"props":{"start":{"boundShapeId":"a"},"end":{"boundShapeId":"c"}}})
# free arrow node, tldraw-style props and an unknown key
cmd("create_shape",{"id":"arr3","type":"arrow","x":700,"y":0,"props":{"start":{"x":0,"y":0},"end":{"x":100,"y":50},"arrowheadStart":"dot","arrowheadEnd":"triangle","bend":20}})
cmd("create_edge",{"id":"e1","from":"a","to":"c","props":{"color":"green","text":"edge label","dash":"dashed"}})
cmd("create_edge",{"id":"e2","from":"b","to":"n1","type":"depends_on","props":{"weight":3}})
cmd("create_shape",{"id":"l1","type":"line","x":800,"y":400,"props":{"points":{"a1":{"id":"a1","index":"a1","x":0,"y":0},"a2":{"id":"a2","index":"a2","x":50,"y":80}},"color":"violet"}})
cmd("create_shape",{"id":"d1","type":"draw","x":900,"y":0,"props":{"segments":[{"type":"free","points":[{"x":0,"y":0,"z":0.5},{"x":10,"y":12,"z":0.5}]}],"color":"black","size":"m"}})
cmd("create_shape",{"id":"img","type":"image","x":1000,"y":0,"w":10,"h":10,"props":{"src":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}})
cmd("create_node",{"id":"doc1","name":"main.py","type":"doc","props":{"text":"def main():\n    print(1)\n","language":"python","owner":"team"}})
cmd("create_shape",{"id":"f1","type":"frame","x":-50,"y":-50,"w":700,"h":500,"name":"Frame one"})
cmd("update_shape",{"id":"a","parent_id":"f1"})
cmd("group",{"ids":["c","n1"],"group_id":"g1"})
cmd("move",{"ids":["a"],"dx":10,"dy":5})
cmd("update_shape",{"id":"b","props":{"opacity":0.5,"customThing":{"nested":[1,2,3]},"big":1795461385736852721}})
cmd("replace_lines",{"node_id":"doc1","start_line":2,"end_line":2,"new_content":"    print(2)"})
cmd("delete_shape",{"ids":["d1"]})
print("head", rev)
ev=req("GET",f"/canvas_commands/{C}/events?after_rev=0&limit=1000")
with open("commits.jsonl","w") as f:
    for c in ev["commits"]: f.write(json.dumps(c, separators=(",",":"))+"\n")
snap=req("GET",f"/canvas_commands/snapshot/{C}")
json.dump(snap, open("snapshot.json","w"), indent=1)
