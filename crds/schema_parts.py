"""Reusable OpenAPI v3 fragments for the pfslayout.io CRDs.

The CRDs repeat a few shapes (a layout, a condition, a toleration, resources); building them from one
definition keeps the three kinds consistent. `generate.py` turns them into `crds/*.yaml`, which stay
the single committed source the chart copies and the API server validates.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

# Strip sizes the API server accepts. CEL in Kubernetes has no bitwise operators, so "power of two" is
# checked by membership in this explicit list (4 KiB .. 64 MiB); OpenAPI min/max bound it as well.
STRIP_SIZE_MIN = 4096
STRIP_SIZE_MAX = 64 * 1024 * 1024
POWERS_OF_TWO = [1 << k for k in range(12, 27)]
assert POWERS_OF_TWO[0] == STRIP_SIZE_MIN and POWERS_OF_TWO[-1] == STRIP_SIZE_MAX

MAX_SERVERS = 64
LAYOUTS = ["1-DH", "1-DV", "2-D"]
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def obj(description: str, properties: dict[str, Schema], required: list[str] | None = None,
        rules: list[Schema] | None = None, **extra: Any) -> Schema:
    out: Schema = {"type": "object", "description": description, "properties": properties}
    if required:
        out["required"] = required
    if rules:
        out["x-kubernetes-validations"] = rules
    out.update(extra)
    return out


def string(description: str, **extra: Any) -> Schema:
    return {"type": "string", "description": description, **extra}


def integer(description: str, **extra: Any) -> Schema:
    return {"type": "integer", "description": description, **extra}


def number(description: str, **extra: Any) -> Schema:
    return {"type": "number", "description": description, **extra}


def boolean(description: str, **extra: Any) -> Schema:
    return {"type": "boolean", "description": description, **extra}


def array(description: str, items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "description": description, "items": items, **extra}


def rule(expr: str, message: str, field_path: str | None = None, reason: str | None = None) -> Schema:
    out: Schema = {"rule": expr, "message": message}
    if field_path:
        out["fieldPath"] = field_path
    if reason:
        out["reason"] = reason
    return out


def immutable(what: str) -> Schema:
    return rule("self == oldSelf", f"{what} is immutable: OrangeFS cannot change it on a live file system; "
                                   "create a new OrangeFSCluster instead")


def strip_size(description: str, default: int | None = 65536) -> Schema:
    out = integer(
        description + f" Bytes; a power of two from {STRIP_SIZE_MIN} (4 KiB) to {STRIP_SIZE_MAX} (64 MiB).",
        format="int64", minimum=STRIP_SIZE_MIN, maximum=STRIP_SIZE_MAX,
        **{"x-kubernetes-validations": [rule(
            "self in [" + ", ".join(str(p) for p in POWERS_OF_TWO) + "]",
            "must be a power of two between 4096 (4 KiB) and 67108864 (64 MiB), e.g. 65536 or 1048576",
            reason="FieldValueInvalid")]},
    )
    if default is not None:
        out["default"] = default
    return out


def object_ref(description: str, kind: str) -> Schema:
    return obj(description, {
        "name": string(f"Name of the {kind} in the same namespace.", minLength=1, maxLength=253,
                       pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
    }, required=["name"])


def quantity(description: str) -> Schema:
    return {
        "description": description,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY,
        "x-kubernetes-int-or-string": True,
    }


def resources(description: str) -> Schema:
    q = quantity("A quantity such as `500m`, `2`, `512Mi` or `4Gi`.")
    return obj(description, {
        "requests": {"type": "object", "description": "Minimum resources the scheduler reserves, by resource "
                     "name (`cpu`, `memory`, `ephemeral-storage`).", "additionalProperties": q,
                     "maxProperties": 16},
        "limits": {"type": "object", "description": "Maximum resources the container may use, by resource name.",
                   "additionalProperties": q, "maxProperties": 16},
    })


def node_selector() -> Schema:
    return {"type": "object", "description": "Node labels every pod the operator creates for this object must "
            "match (merged into each pod's `nodeSelector`).",
            "additionalProperties": {"type": "string", "maxLength": 63}, "maxProperties": 32}


def tolerations() -> Schema:
    return array("Tolerations added to every pod the operator creates for this object.", obj(
        "One toleration, as in a Pod spec.", {
            "key": string("Taint key to match; empty with `operator: Exists` tolerates every taint.",
                          maxLength=316),
            "operator": string("`Equal` (key and value must match) or `Exists` (key only).",
                               enum=["Equal", "Exists"], default="Equal"),
            "value": string("Taint value to match when `operator` is `Equal`.", maxLength=63),
            "effect": string("Taint effect to match; empty matches all effects.",
                             enum=["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
            "tolerationSeconds": integer("How long a `NoExecute` taint is tolerated before eviction.",
                                         format="int64", minimum=0),
        }), maxItems=32)


def conditions() -> Schema:
    # The shape of metav1.Condition, so kubectl wait --for=condition=Ready works.
    return array(
        "Standard conditions, one per `type`: the latest observation of the object's state.",
        obj("One condition (metav1.Condition).", {
            "type": string("Condition type in CamelCase, e.g. `Ready`.", maxLength=316,
                           pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                                   r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"),
            "status": string("`True`, `False` or `Unknown`.", enum=["True", "False", "Unknown"]),
            "observedGeneration": integer("`metadata.generation` the condition was set for.",
                                          format="int64", minimum=0),
            "lastTransitionTime": string("When the condition last changed status.", format="date-time"),
            "reason": string("One CamelCase word a program can switch on.", minLength=1, maxLength=1024,
                             pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
            "message": string("Human-readable detail; for an error, the field and the fix.", maxLength=32768),
        }, required=["type", "status", "lastTransitionTime", "reason", "message"]),
        maxItems=16, **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def observed_generation() -> Schema:
    return integer("`metadata.generation` of the spec the operator last reconciled; when it is lower than "
                   "`metadata.generation`, the status is stale.", format="int64", minimum=0)


def server_pins(description: str) -> Schema:
    return array(description, integer("A server ordinal: 0 is the first server pod (`<cluster>-server-0`).",
                                      minimum=0, maximum=MAX_SERVERS - 1),
                 minItems=1, maxItems=MAX_SERVERS, **{"x-kubernetes-list-type": "set"})


def layout_fields() -> dict[str, Schema]:
    return {
        "layout": string(
            "Data layout of [003]: `1-DH` stripes each file over all (pinned) servers with a small strip, "
            "`1-DV` keeps each process's data on one server (one datafile per file, or strip = request size "
            "for a shared file), `2-D` spreads each file over one group of n/g servers.",
            enum=LAYOUTS),
        "groups": integer("Storage-group count g of a `2-D` layout (required for `2-D`, forbidden otherwise); "
                          "each file or request covers n/g servers. Must divide the number of servers it "
                          "spans (`servers` when pinned, else the cluster's server count, checked by the "
                          "operator).", minimum=2, maximum=MAX_SERVERS),
        "stripSize": strip_size("OrangeFS `strip_size` (`user.pvfs2.dist_params`) for files created under "
                                "the directory."),
        "servers": server_pins("Pins the layout to these server ordinals (OrangeFS `user.pvfs2.layout` LIST "
                               "with a `server_list`); omitted means all servers, placed round robin."),
    }


def layout_rules() -> list[Schema]:
    return [
        rule("self.layout == '2-D' ? has(self.groups) : !has(self.groups)",
             "groups is required for layout 2-D and forbidden for 1-DH and 1-DV", ".groups"),
        rule("!has(self.groups) || !has(self.servers) || "
             "(size(self.servers) % self.groups == 0 && size(self.servers) > self.groups)",
             "groups must divide the number of pinned servers and be smaller than it "
             "(e.g. groups: 2 with 4 servers)", ".groups"),
    ]


def layout(description: str) -> Schema:
    return obj(description, layout_fields(), required=["layout"], rules=layout_rules())
