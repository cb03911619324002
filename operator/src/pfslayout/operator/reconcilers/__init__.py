"""One reconciler module per kind: the API I/O around that kind's pure decisions (pfslayout.kinds).

No Kopf here: Events go through a `Post` callable (`events.Post`), so the handler modules stay thin and
a reconciler can be driven without Kopf.
"""
