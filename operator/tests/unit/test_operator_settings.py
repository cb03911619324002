"""The operator's settings (pfslayout.operator.settings): every variable read once, validated together,
one line per malformed value naming it and what it accepts; the entry module stops the process with
exit 2 before Kopf starts, and nothing but the entry module registers handlers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pfslayout import images
from pfslayout.operator import settings

WEBHOOK = {"PFSLAYOUT_WEBHOOK_ADDR": "0.0.0.0:9443", "POD_NAMESPACE": "pfs-system",
           "PFSLAYOUT_WEBHOOK_SERVICE": "svc", "PFSLAYOUT_WEBHOOK_SECRET": "sec",
           "PFSLAYOUT_WEBHOOK_CONFIGURATION": "cfg"}


def test_defaults_without_any_variable() -> None:
    s = settings.load({})
    assert s.watch_namespaces is None and s.webhook is None and s.metrics_addr is None
    assert (s.retry_s, s.forbidden_retry_s, s.resync_s, s.layout_recheck_s) == (5, 60, 300, 900)
    assert s.watch_server_timeout == 120 and s.watch_client_timeout == 150
    assert s.cluster_domain == "cluster.local" and s.operator_image == images.DEFAULT_OPERATOR_IMAGE
    assert s.operator_image_pull_policy == "IfNotPresent"
    assert (s.orangefs_image, s.mpi_image) == (images.DEFAULT_ORANGEFS_IMAGE, images.DEFAULT_MPI_IMAGE)
    chart = settings.load({"PFSLAYOUT_ORANGEFS_IMAGE": "reg.example/o:1", "PFSLAYOUT_MPI_IMAGE": "reg.example/m:1"})
    assert (chart.orangefs_image, chart.mpi_image) == ("reg.example/o:1", "reg.example/m:1")
    assert s.reporting_instance  # the events API rejects Events without one


def test_the_charts_values_are_read() -> None:
    s = settings.load({**WEBHOOK, "PFSLAYOUT_METRICS_ADDR": ":9090", "PFSLAYOUT_WATCH_NAMESPACES": "a, b-*",
                       "PFSLAYOUT_RETRY_SECONDS": "2", "PFSLAYOUT_CLUSTER_DOMAIN": "hpc.example",
                       "PFSLAYOUT_OPERATOR_IMAGE": "reg/op:1", "PFSLAYOUT_OPERATOR_IMAGE_PULL_POLICY": "Always",
                       "POD_NAME": "op-0", "PFSLAYOUT_WEBHOOK_SCOPE": "fixed"})
    assert s.metrics_addr == ("0.0.0.0", 9090) and s.watch_namespaces == ("a", "b-*") and s.retry_s == 2
    assert (s.cluster_domain, s.operator_image, s.operator_image_pull_policy) == ("hpc.example", "reg/op:1", "Always")
    assert s.reporting_instance == "op-0"
    assert s.webhook is not None and (s.webhook.host, s.webhook.port, s.webhook.scope) == ("0.0.0.0", 9443, "fixed")
    assert s.webhook.dns_names() == ["svc.pfs-system.svc", "svc.pfs-system.svc.cluster.local"]


@pytest.mark.parametrize(("var", "raw", "accepted"), [
    ("PFSLAYOUT_RETRY_SECONDS", "soon", "give e.g. 5"),
    ("PFSLAYOUT_LAYOUT_POLL_SECONDS", "0", "positive number"),
    ("PFSLAYOUT_RESYNC_SECONDS", "nan", "positive number"),
    ("PFSLAYOUT_WATCH_NAMESPACES", "batch-", "globs like 'batch-*'"),  # a glob no namespace name can match
    ("PFSLAYOUT_WATCH_NAMESPACES", "Batch", "globs like 'batch-*'"),
    ("PFSLAYOUT_METRICS_ADDR", "9090", "HOST:PORT"),
    ("PFSLAYOUT_OPERATOR_IMAGE_PULL_POLICY", "Sometimes", "IfNotPresent, Always, Never"),
    ("PFSLAYOUT_CLUSTER_DOMAIN", "Cluster_Local", "not a DNS name"),
    ("PFSLAYOUT_WEBHOOK_CERTS", "self", "operator, mounted"),
])
def test_a_malformed_value_is_one_line_naming_the_variable_and_what_it_accepts(var: str, raw: str,
                                                                              accepted: str) -> None:
    env = {**WEBHOOK, var: raw} if var.startswith("PFSLAYOUT_WEBHOOK_") else {var: raw}
    with pytest.raises(settings.SettingsError) as err:
        settings.load(env)
    assert err.value.lines == [str(err.value)] and str(err.value).startswith(f"{var}: ")
    assert accepted in str(err.value) and repr(raw) in str(err.value)


def test_every_malformed_value_is_named_at_once() -> None:
    with pytest.raises(settings.SettingsError) as err:
        settings.load({"PFSLAYOUT_WEBHOOK_ADDR": "0.0.0.0:x", "PFSLAYOUT_RETRY_SECONDS": "-1",
                       "PFSLAYOUT_WATCH_NAMESPACES": "a,B"})
    named = [line.split(":", 1)[0] for line in err.value.lines]
    assert named == ["PFSLAYOUT_WATCH_NAMESPACES", "PFSLAYOUT_RETRY_SECONDS", "PFSLAYOUT_WEBHOOK_ADDR",
                     "POD_NAMESPACE", "PFSLAYOUT_WEBHOOK_SERVICE", "PFSLAYOUT_WEBHOOK_SECRET",
                     "PFSLAYOUT_WEBHOOK_CONFIGURATION"]
    assert all("is required when PFSLAYOUT_WEBHOOK_ADDR is set" in line for line in err.value.lines[3:])


def python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PFSLAYOUT_", "POD_"))}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_entry_module_stops_a_malformed_setting_with_exit_2_and_one_line_each() -> None:
    result = python("import pfslayout.operator.main", {"PFSLAYOUT_RETRY_SECONDS": "soon",
                                                       "PFSLAYOUT_METRICS_ADDR": "metrics"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "pfs-layout-operator: PFSLAYOUT_RETRY_SECONDS: 'soon' is not a number of seconds; unset it or give e.g. 5",
        "pfs-layout-operator: PFSLAYOUT_METRICS_ADDR: 'metrics' is not HOST:PORT; set e.g. 127.0.0.1:9090"]


REGISTERED = """
import importlib, pkgutil
import kopf
def ids():
    r = kopf.get_default_registry()
    return sorted(h.id for h in [*r._spawning.get_all_handlers(), *r._changing.get_all_handlers(),
                                 *r._watching.get_all_handlers(), *r._activities.get_all_handlers()])
print(len(ids()))  # Kopf's own (its default login)
import pfslayout.operator as op
for m in pkgutil.walk_packages(op.__path__, "pfslayout.operator."):
    if m.name != "pfslayout.operator.main":
        importlib.import_module(m.name)
print(len(ids()))
import pfslayout.operator.main
print(len(ids()))
"""


def test_only_the_entry_module_registers_handlers() -> None:
    result = python(REGISTERED, {})
    assert result.returncode == 0, result.stderr
    kopfs, imported, entry = (int(n) for n in result.stdout.split())
    assert imported == kopfs and entry > kopfs + 10, result.stdout


def test_no_other_operator_module_reads_the_environment() -> None:
    """One place per setting: a new variable goes into settings.py, not into the module that uses it."""
    from pathlib import Path

    import pfslayout.operator as op

    root = Path(op.__path__[0])
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if any(word in p.read_text() for word in ("os.environ", "os.getenv", "getenv(")))
    assert readers == ["settings.py"]


def test_reconcilers_take_the_settings_from_their_context() -> None:
    """Reconcilers are handed the settings (reconcilers/base.py's Context), so a unit test can give any
    value without touching the process: none asks settings.current() itself."""
    from pathlib import Path

    import pfslayout.operator.reconcilers as rec

    root = Path(rec.__path__[0])
    askers = sorted(p.name for p in root.rglob("*.py") if "settings.current" in p.read_text())
    assert askers == []
