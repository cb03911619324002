"""Operator plumbing that needs no cluster: Kopf settings, metrics wrappers, the metrics endpoint."""

from __future__ import annotations

import asyncio
import urllib.request

import kopf
import pytest

from pfslayout import metrics
from pfslayout.operator import finalizer, settings


def configured(env: dict[str, str]) -> kopf.OperatorSettings:
    s, ours = kopf.OperatorSettings(), settings.load(env)
    settings.configure(s, ours, finalizer.name(ours.watch_namespaces), 1_700_000_000_123_456_789)
    return s


def test_kopf_settings_have_timeouts_and_pfslayout_keys() -> None:
    s = configured({})
    assert s.watching.server_timeout == 120
    assert s.watching.client_timeout is not None and s.watching.client_timeout > s.watching.server_timeout
    assert s.watching.connect_timeout == 10
    assert s.persistence.finalizer == finalizer.LEGACY  # every namespace served
    assert isinstance(s.persistence.progress_storage, kopf.AnnotationsProgressStorage)
    assert s.persistence.progress_storage.prefix == "operator.pfslayout.io"
    assert isinstance(s.persistence.diffbase_storage, kopf.AnnotationsDiffBaseStorage)
    assert s.persistence.diffbase_storage.prefix == "operator.pfslayout.io"
    assert s.posting.enabled and s.posting.reporting_component == "pfs-layout-operator"
    assert s.posting.reporting_instance  # the events API rejects an empty one


def test_peering_priorities_make_the_oldest_replica_lead() -> None:
    """Kopf pauses an operator that sees a peer of higher or the same priority: the priority is the start
    time negated (a younger replica stands by), the record's lifetime the configured failover time."""
    older, younger = kopf.OperatorSettings(), kopf.OperatorSettings()
    ours = settings.load({"PFSLAYOUT_PEERING_LIFETIME_SECONDS": "12"})
    settings.configure(older, ours, "f", 1_700_000_000_000_000_000)
    settings.configure(younger, ours, "f", 1_700_000_000_000_001_000)  # one microsecond later
    assert older.peering.priority > younger.peering.priority
    assert older.peering.lifetime == 12 and older.peering.stealth
    assert configured({}).peering.lifetime == 15


def test_every_retried_handler_and_timer_backs_off_seconds_not_kopfs_minute() -> None:
    """Kopf retries a handler or timer that raised after its `backoff`, 60 s unless set: a timer without
    one stalled calibration and layout progress a minute after each API-server restart."""
    from pfslayout.operator import handlers

    registry = kopf.OperatorRegistry()
    ours = settings.load({"PFSLAYOUT_RETRY_SECONDS": "7"})
    default = kopf.get_default_registry()
    kopf.set_default_registry(registry)  # registered into a registry of this test's own
    try:
        handlers.register(ours)
    finally:
        kopf.set_default_registry(default)
    retried = [*registry._spawning.get_all_handlers(), *registry._changing.get_all_handlers()]
    assert {h.id for h in retried} >= {"progress", "resync", "reconcile", "cleanup", "wipe-hostpath", "release-volumes"}
    assert all(h.backoff == 7 for h in retried), [(h.id, h.backoff) for h in retried]


def test_user_annotations_under_pfslayout_io_stay_in_kopfs_diff() -> None:
    """Kopf drops annotations under its storage prefix from the essence it diffs; the scale-down consent
    (`pfslayout.io/confirm-scale-down`) must survive, or annotating would not trigger a reconcile."""
    s = configured({})
    body = kopf.Body({"metadata": {"annotations": {
        "pfslayout.io/confirm-scale-down": "2", "operator.pfslayout.io/reconcile": "{}"}}, "spec": {}})
    essence = s.persistence.diffbase_storage.build(body=body)
    essence = s.persistence.progress_storage.clear(essence=essence)
    assert essence["metadata"]["annotations"] == {"pfslayout.io/confirm-scale-down": "2"}


def test_watch_timeouts_from_environment() -> None:
    s = configured({"PFSLAYOUT_WATCH_SERVER_TIMEOUT": "30"})
    assert s.watching.server_timeout == 30 and s.watching.client_timeout == 60
    # an integer, or the API server refuses every watch (`timeoutSeconds=30.0`: found by the silent-watch test)
    assert isinstance(s.watching.server_timeout, int)
    s = configured({"PFSLAYOUT_WATCH_SERVER_TIMEOUT": "2.5"})
    assert s.watching.server_timeout == 3 and isinstance(s.watching.server_timeout, int)
    with pytest.raises(settings.SettingsError, match="PFSLAYOUT_WATCH_SERVER_TIMEOUT"):
        configured({"PFSLAYOUT_WATCH_SERVER_TIMEOUT": "soon"})
    with pytest.raises(settings.SettingsError, match="must be a positive number"):
        configured({"PFSLAYOUT_WATCH_SERVER_TIMEOUT": "-1"})


def value(name: str, **labels: str) -> float:
    for family in [*metrics.RECONCILES.collect(), *metrics.ERRORS.collect(), *metrics.DURATION.collect()]:
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def test_instrumented_counts_successes_errors_and_time() -> None:
    @metrics.instrumented("TestKind", "sync")
    def ok(x: int) -> int:
        return x + 1

    @metrics.instrumented("TestKind", "sync")
    def bad() -> None:
        raise RuntimeError("boom")

    @metrics.instrumented("TestKind", "async")
    async def aok() -> str:
        return "done"

    before = value("pfslayout_reconcile_total", kind="TestKind", handler="sync", result="success")
    assert ok(1) == 2
    with pytest.raises(RuntimeError):
        bad()
    assert asyncio.run(aok()) == "done"
    assert value("pfslayout_reconcile_total", kind="TestKind", handler="sync", result="success") == before + 1
    assert value("pfslayout_reconcile_total", kind="TestKind", handler="sync", result="error") >= 1
    assert value("pfslayout_reconcile_errors_total", kind="TestKind", handler="sync", error="RuntimeError") >= 1
    assert value("pfslayout_reconcile_total", kind="TestKind", handler="async", result="success") >= 1
    assert value("pfslayout_reconcile_duration_seconds_count", kind="TestKind", handler="sync") >= 2


def test_metrics_endpoint_serves_the_counters() -> None:
    server = metrics.serve("127.0.0.1", 0)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        metrics.RECONCILES.labels("TestKind", "served", "success").inc()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'pfslayout_reconcile_total{handler="served",kind="TestKind",result="success"} 1.0' in text


@pytest.mark.parametrize("addr", ["9090", "host:", "host:port", "1.2.3.4:70000"])
def test_bad_metrics_address_names_the_variable(addr: str) -> None:
    with pytest.raises(settings.SettingsError, match=r"^PFSLAYOUT_METRICS_ADDR: .* is not HOST:PORT"):
        settings.load({"PFSLAYOUT_METRICS_ADDR": addr})


def test_events_for_every_state_change_and_only_then() -> None:
    from pfslayout.kinds.orangefscluster.status import events
    from pfslayout.operator.shared.events import post_all

    def cond(type_: str, status: str, reason: str, message: str = "m") -> dict[str, str]:
        return {"type": type_, "status": status, "reason": reason, "message": message}

    posted: list[tuple[str, str]] = []

    def post(body: dict, type_: str, reason: str, message: str) -> None:
        posted.append((type_, reason))

    provisioning = {"phase": "Provisioning", "conditions": [cond("Ready", "False", "Provisioning"),
                                                          cond("SpecApplied", "True", "Applied")]}
    post_all(post, {}, events({}, provisioning))
    assert posted == [("Normal", "PhaseProvisioning"), ("Normal", "Provisioning"), ("Normal", "Applied")]
    posted.clear()
    post_all(post, {}, events(provisioning, provisioning))
    assert posted == []
    refused = {"phase": "Degraded", "conditions": [cond("Ready", "False", "ScaleDownRefused", "why"),
                                                   cond("SpecApplied", "False", "ScaleDownRefused", "why")]}
    post_all(post, {}, events(provisioning, refused))
    assert posted == [("Warning", "PhaseDegraded"), ("Warning", "ScaleDownRefused")]
