"""What every container that runs on the real node actually ran with, recorded while the session runs.

The real node's containerd keeps one bundle directory per running task (`<state>/node/containerd/state/
io.containerd.runtime.v2.task/k8s.io/<id>/`): its `config.json` is the OCI runtime spec runc enforces —
what the kubelet and containerd made of the pod after admission and defaulting, not the operator's
templates — and `init.pid` names the container's first process. A thread scans that directory every
10 ms (a bundle lives from create to task delete, ≥ ~50 ms even for a `cp`), records each new container's
spec, and reads `/proc/<pid>` of the ones still running once runc has exec'd them: uid, NoNewPrivs,
seccomp mode, effective capabilities, and whether `/` is mounted read-only. The pod's labels are read
once per pod from the API server, so the audit knows which pods the project created.

`test_real_pod_hardening.py` checks the record at the end of the session (docs/reliability.md).

Sessions that share one cluster (pytest-xdist workers) share one audit: the session holding the lock in
the run's audit directory (PFSLAYOUT_E2E_AUDIT_DIR, made by e2e/test-all.sh) scans for all of them and
appends what it sees to `record.jsonl` there, the others wait for the lock and take over when it leaves;
the hardening test reads that file, whichever worker runs it. Without that directory a session scans
for itself and keeps its record in memory.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCAN_S = 0.01
LABELS_S = 0.5


@dataclass
class Seen:
    """One container: from its OCI spec (always) and its running process (when caught running)."""

    namespace: str
    pod: str
    container: str
    spec_uid: int
    spec_no_new_privs: bool
    spec_seccomp: bool
    spec_caps: tuple[str, ...]
    spec_root_ro: bool
    proc: dict[str, Any] | None = None  # uid, no_new_privs, seccomp, cap_eff, root_ro, comm


@dataclass
class NodeAudit:
    task_dir: Path
    pod_labels: Callable[[str, str], dict[str, str] | None]
    seen: dict[str, Seen] = field(default_factory=dict)
    labels: dict[tuple[str, str], dict[str, str] | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # MPIJobs (namespace, name) that a previous release's operator made (test_real_upgrade.py): their pods
    # follow that release's rules, not this checkout's, and the hardening test leaves them out.
    released_jobs: set[tuple[str, str]] = field(default_factory=set)
    sink: Path | None = None  # record.jsonl of the run's audit directory, appended to as things are seen
    _skip: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: Any = None  # the shared scanner's lock file, held while the session lasts

    def start(self) -> NodeAudit:
        # The API lookups (a subprocess each) run apart, so the 10 ms scan never waits for one.
        for target, period, name in ((self.scan, SCAN_S, "node-audit-scan"), (self.label, LABELS_S, "node-audit")):
            t = threading.Thread(target=self._loop, args=(target, period), name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def scan_when_free(self, lock_path: Path) -> None:
        """Starts scanning once this session holds the run's scanner lock (kept until stop())."""
        lock = open(lock_path, "w")  # noqa: SIM115  (held, and so open, while this session scans)
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if self._stop.wait(0.5):
                    lock.close()
                    return
        self._lock = lock
        self.start()

    @property
    def scanning(self) -> bool:
        """Whether this session's scanner runs (with a shared audit: whether it holds the run's lock)."""
        return any(t.name == "node-audit-scan" for t in self._threads)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)
        self.label()
        if self._lock is not None:
            self._lock.close()

    def _loop(self, step: Callable[[], None], period: float) -> None:
        while not self._stop.wait(period):
            try:
                step()
            except Exception as err:  # an audit hiccup is reported by the test, never kills the session
                if len(self.errors) < 20:
                    self.errors.append(repr(err))
                    self._write({"error": repr(err)})

    def label(self) -> None:
        for s in list(self.seen.values()):
            key = (s.namespace, s.pod)
            if key not in self.labels:
                self.labels[key] = self.pod_labels(*key)
                self._write({"pod": list(key), "labels": self.labels[key]})

    def _write(self, line: dict[str, Any]) -> None:
        if self.sink is not None:
            with open(self.sink, "a") as out:  # one write of one line: readers never see half of it
                out.write(json.dumps(line) + "\n")

    def scan(self) -> None:
        try:
            entries = os.listdir(self.task_dir)
        except FileNotFoundError:
            return
        for cid in entries:
            if cid in self._skip:
                continue
            s = self.seen.get(cid)
            if s is None:
                s = self._from_spec(cid)
                if s is None:
                    continue
            if s.proc is None:
                s.proc = _process(self.task_dir / cid)
                if s.proc is not None:
                    self._skip.add(cid)
                    self._write({"cid": cid, "seen": asdict(s)})

    def _from_spec(self, cid: str) -> Seen | None:
        try:
            spec = json.loads((self.task_dir / cid / "config.json").read_text())
        except (OSError, ValueError):
            return None  # not written yet, or gone: the next scan tells
        ann = spec.get("annotations") or {}
        if ann.get("io.kubernetes.cri.container-type") != "container":
            self._skip.add(cid)  # the pod's sandbox (pause) container
            return None
        proc = spec.get("process") or {}
        linux = spec.get("linux") or {}
        s = Seen(namespace=ann.get("io.kubernetes.cri.sandbox-namespace", ""),
                 pod=ann.get("io.kubernetes.cri.sandbox-name", ""),
                 container=ann.get("io.kubernetes.cri.container-name", ""),
                 spec_uid=int((proc.get("user") or {}).get("uid", -1)),
                 spec_no_new_privs=bool(proc.get("noNewPrivileges")),
                 spec_seccomp=bool(linux.get("seccomp")),
                 spec_caps=tuple(sorted((proc.get("capabilities") or {}).get("effective") or [])),
                 spec_root_ro=bool((spec.get("root") or {}).get("readonly")))
        self.seen[cid] = s
        self._write({"cid": cid, "seen": asdict(s)})
        return s


def _process(bundle: Path) -> dict[str, Any] | None:
    """The container's first process as the kernel sees it, or None before runc exec'd it / after exit."""
    try:
        pid = int((bundle / "init.pid").read_text().strip())
        status = Path(f"/proc/{pid}/status").read_text()
        mountinfo = Path(f"/proc/{pid}/mountinfo").read_text()
    except (OSError, ValueError):
        return None
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    comm = fields.get("Name", "").strip()
    if comm.startswith("runc"):
        return None  # runc's init (`runc:[2:INIT]`), not yet the container's own process
    root_ro = False
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[4] == "/":
            root_ro = "ro" in parts[5].split(",")  # the last mount on / is the one the process sees
    return {"comm": comm, "uid": int(fields["Uid"].split()[1]),
            "no_new_privs": fields.get("NoNewPrivs", "").strip() == "1", "seccomp": fields.get("Seccomp", "").strip(),
            "cap_eff": int(fields["CapEff"].strip(), 16), "root_ro": root_ro}


def audit_dir() -> Path | None:
    """The run's shared audit directory (e2e/test-all.sh makes a fresh one per run), if any."""
    path = os.environ.get("PFSLAYOUT_E2E_AUDIT_DIR")
    return Path(path) if path else None


def start(task: Path, pod_labels: Callable[[str, str], dict[str, str] | None]) -> NodeAudit:
    """This session's audit: its own scanner, or — with a run's audit directory — a scanner that waits for
    the run's lock, so one session scans at a time and another takes over when it leaves (pytest-xdist shuts
    workers down one by one before the serial lane, which runs pods too)."""
    shared = audit_dir()
    if shared is None:
        return NodeAudit(task, pod_labels).start()
    shared.mkdir(parents=True, exist_ok=True)
    audit = NodeAudit(task, pod_labels, sink=shared / "record.jsonl")
    waiter = threading.Thread(target=audit.scan_when_free, args=(shared / "scanner.lock",), name="node-audit",
                              daemon=True)
    waiter.start()
    audit._threads.append(waiter)
    return audit


def note_released(ns: str, jobs: set[str], own: NodeAudit | None) -> None:
    """MPIJobs a previous release's operator made (judged by that release's rules, not this checkout's)."""
    if own is not None:
        own.released_jobs |= {(ns, j) for j in jobs}
    shared = audit_dir()
    if shared is not None:
        with open(shared / "released.jsonl", "a") as out:
            out.writelines(json.dumps([ns, j]) + "\n" for j in sorted(jobs))


def record(own: NodeAudit | None, pod_labels: Callable[[str, str], dict[str, str] | None]) -> NodeAudit | None:
    """What the run's scanner recorded: this session's own audit, or the shared record another session
    of the run is writing (read now; labels still missing are looked up). None without any audit."""
    shared = audit_dir()
    if shared is None or not (shared / "record.jsonl").exists():
        return own
    out = NodeAudit(own.task_dir if own else Path("/nonexistent"), pod_labels)
    for line in (shared / "record.jsonl").read_text().splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line being written right now
        if "error" in item:
            out.errors.append(item["error"])
        elif "cid" in item:
            seen = item["seen"]
            out.seen[item["cid"]] = Seen(**{**seen, "spec_caps": tuple(seen["spec_caps"])})
        else:
            out.labels[(item["pod"][0], item["pod"][1])] = item["labels"]
    if (shared / "released.jsonl").exists():
        out.released_jobs = {tuple(json.loads(line)) for line in (shared / "released.jsonl").read_text().splitlines()
                             if line}
    if own is not None:
        out.released_jobs |= own.released_jobs
    return out


def task_dir(state_dir: Path) -> Path:
    return state_dir / "node" / "containerd" / "state" / "io.containerd.runtime.v2.task" / "k8s.io"
