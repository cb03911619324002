"""LayoutPolicy for real: the example `policies/layoutpolicy.yaml` (one rule of each mode) on real OrangeFS
server pods. Each directory carries the chosen hints (read back with `pvfs2-xattr`, and a file created
there afterwards has the datafile count the layout asks for in `pvfs2-viewdist`), the status explains
each decision, a hint changed by hand is set back by the drift check, an edit of the policy changes the
decision, and a bad rule is reported while the others stay applied."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from pfstestkit import REPO
from pfstestkit.kinds import MOUNT
from pfstestkit.ofs_pods import datafiles, sh, toolbox, wait_ofs_ready
from pfstestkit.policies import RECHECK_S, cond, lp_status, read_hint, reasons
from pfstestkit.real import place


def example() -> tuple[dict[str, Any], dict[str, Any]]:
    docs = list(yaml.safe_load_all((REPO / "policies" / "layoutpolicy.yaml").read_text()))
    return (next(d for d in docs if d["kind"] == "OrangeFSCluster"),
            next(d for d in docs if d["kind"] == "LayoutPolicy"))










def test_example_policy_lays_out_explains_repairs_and_reports(cluster, lp_operator, namespace: str,  # noqa: ANN001
                                                              ) -> None:
    ofs, lp = example()
    ofs = place(ofs, cluster.mode)
    ofs["spec"]["reclaimPolicy"] = "Delete"
    name = lp["metadata"]["name"]
    cluster.apply(ofs, namespace=namespace)
    cluster.apply(lp, namespace=namespace)
    wait_ofs_ready(cluster, namespace, ofs["metadata"]["name"], 4)

    def applied() -> dict[str, Any] | None:
        st = lp_status(cluster, namespace, name)
        return st if cond(st, "Ready").get("status") == "True" and st.get("appliedRules") == "3/3" else None
    try:
        st = cluster.wait_until(applied, "the policy applied", timeout=240, interval=2)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{lp_status(cluster, namespace, name)}\n{lp_operator.log_tail()}") from None

    # The status explains each decision.
    results, checkpoints, inputs = st["rules"]
    assert results["decision"] == "static" and results["layout"] == {"layout": "2-D", "groups": 2,
                                                                     "stripSize": 1048576}, results
    assert checkpoints["decision"] == "static" and len(checkpoints["candidates"]) == 3, checkpoints
    for c in checkpoints["candidates"]:
        assert c["networkSeconds"] > 0 and c["storageSeconds"] > 0
    assert checkpoints["layout"]["layout"] == checkpoints["candidates"][0]["layout"]
    assert checkpoints["margin"] >= 0 and checkpoints["message"]
    assert inputs["decision"] == "hybrid" and [r["name"] for r in inputs["replicas"]] == ["wide", "deep"]
    assert all(r["applied"] and r["appliedAt"] for r in st["rules"])
    assert st["paramsSource"] == "defaults" and cond(st, "Calibrated")["reason"] == "NoCalibration"
    table = cluster.kubectl("get", "lp", name, "-n", namespace).stdout
    assert "3/3" in table and "/results=2-D/g2 ✓" in table, table

    # On the file system: the keys read back, and a new file gets the datafiles the layout asks for
    # (the operator's own check file says the same).
    tool = toolbox(cluster, namespace, ofs["metadata"]["name"])
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/results", "user.pvfs2.num_dfiles") == "2"
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/inputs/.replica-deep",
                     "user.pvfs2.dist_params") == "strip_size:1048576"
    want = {"results": 2, "checkpoints": int(checkpoints["hints"]["user.pvfs2.num_dfiles"]), "inputs": 4}
    for rule in st["rules"]:
        assert rule["datafiles"] == want[rule["path"].lstrip("/")], rule
    for d, n in want.items():
        out = sh(cluster, namespace, tool, f"head -c 4194305 /dev/zero > /tmp/f && pvfs2-cp /tmp/f {MOUNT}/{d}/new "
                 f"&& pvfs2-viewdist -f {MOUNT}/{d}/new")
        assert datafiles(out) == n, (d, out)
    for reason in ("ApplyingHints", "HintsApplied", "LayoutChosen"):
        assert reason in reasons(cluster, namespace, name)

    # Drift by hand (pvfs2-xattr) is set back by the periodic check, with a Warning.
    sh(cluster, namespace, tool, f"pvfs2-xattr -s -k user.pvfs2.num_dfiles -v 3 {MOUNT}/results")
    # The status is the record of a repair (the Event is queued by Kopf, best effort: docs/reliability.md);
    # twelve checks' time, as in the operator-kill test: with lanes side by side four (80 s) once ran out.
    cluster.wait_until(lambda: (lp_status(cluster, namespace, name).get("lastDriftRepair") or {}).get("hints"),
                       "the drift repaired", timeout=RECHECK_S * 12, interval=2)
    cluster.wait_until(lambda: "DriftRepaired" in reasons(cluster, namespace, name) or None,
                       "the drift repair's Warning", timeout=60, interval=2)
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/results", "user.pvfs2.num_dfiles") == "2"

    # A file written under the 2-D layout, with content to check after it is re-laid out.
    before = sh(cluster, namespace, tool, f"head -c 3145739 /dev/urandom > /tmp/d && md5sum < /tmp/d && "
                f"pvfs2-cp /tmp/d {MOUNT}/results/data && pvfs2-viewdist -f {MOUNT}/results/data")
    digest = before.split()[0]
    assert datafiles(before) == 2, before

    # An edit of the policy (kubectl) changes the decision, and a bad rule is reported while the others
    # stay applied.
    edited = copy.deepcopy(lp)
    edited["spec"]["rules"][0]["explicit"] = {"layout": "1-DH", "stripSize": 65536}
    edited["spec"]["rules"].append({"path": f"{MOUNT}/oops", "mode": "explicit", "explicit": {"layout": "1-DV"}})
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(edited))

    def replanned() -> dict[str, Any] | None:
        s = lp_status(cluster, namespace, name)
        ok = s.get("appliedRules") == "3/4" and s["rules"][0].get("applied") and \
            (s["rules"][0].get("layout") or {}).get("layout") == "1-DH"
        return s if ok else None
    st = cluster.wait_until(replanned, "the edited policy applied", timeout=180, interval=2)
    ready = cond(st, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "RuleInvalid", ready
    assert "spec.rules[3].path" in ready["message"] and "give the path inside the file system, /oops" \
        in ready["message"], ready
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/results", "user.pvfs2.num_dfiles") == "4"
    assert {"DecisionChanged", "RuleInvalid"} <= set(reasons(cluster, namespace, name))

    # Files written before the change keep the 2-D layout (new files get 1-DH): the status lists them
    # and suggests migrate; `migrate: true` re-lays them out by copying, content intact.
    older = st["rules"][0]["existingFiles"]
    assert older["olderLayout"] >= 2 and {"/results/data", "/results/new"} <= set(older["files"]), older
    assert "OlderLayouts" in reasons(cluster, namespace, name)
    edited["spec"]["rules"][0]["migrate"] = True
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(edited))

    def migrated() -> dict[str, Any] | None:
        s = lp_status(cluster, namespace, name)
        files = s["rules"][0].get("existingFiles") or {}
        return s if files.get("olderLayout") == 0 and files.get("migratedTotal", 0) >= 2 else None
    try:
        st = cluster.wait_until(migrated, "the old files migrated", timeout=240, interval=2)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{lp_status(cluster, namespace, name)}\n{lp_operator.log_tail()}") from None
    after = sh(cluster, namespace, tool, f"pvfs2-viewdist -f {MOUNT}/results/data && pvfs2-cp {MOUNT}/results/data "
               "/tmp/back && md5sum < /tmp/back && pvfs2-ls -a " + f"{MOUNT}/results")
    assert datafiles(after) == 4 and digest in after, after
    assert ".pfslayout-migrate-" not in after, after  # no temporary copy left behind
    assert "FilesMigrated" in reasons(cluster, namespace, name)
