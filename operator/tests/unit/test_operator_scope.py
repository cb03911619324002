"""Which namespaces the operator serves (pfslayout.operator.scope; the list read by settings.py): the
chart's list, parsed and matched the way Kopf matches its --namespace globs."""

from __future__ import annotations

import pytest

from pfslayout.errors import InputError
from pfslayout.operator import scope, settings


@pytest.mark.parametrize("raw", [None, "", " , ", "*", "batch,*"])
def test_unset_empty_or_star_serves_every_namespace(raw: str | None) -> None:
    assert settings.parse_namespaces(raw) is None
    assert scope.served("kube-system", settings.parse_namespaces(raw))


def test_names_and_globs() -> None:
    patterns = settings.parse_namespaces("e2e-*, batch ,lab-?")
    assert patterns == ("e2e-*", "batch", "lab-?")
    assert [scope.served(ns, patterns) for ns in ("e2e-x-1a2b3c", "batch", "lab-1", "lab-12", "batch2", "default")] \
        == [True, True, True, False, False, False]


@pytest.mark.parametrize("bad", ["Batch", "!kube-*", "a_b", "-x", "x" * 64, "e2e-*,ns/evil"])
def test_malformed_entries_name_the_variable_and_the_fix(bad: str) -> None:
    with pytest.raises(InputError) as err:
        settings.parse_namespaces(bad)
    message = str(err.value)
    assert message.startswith("PFSLAYOUT_WATCH_NAMESPACES: ") and "\n" not in message
    assert "globs like 'batch-*'" in message


def test_from_the_environment() -> None:
    assert settings.load({settings.WATCH_NAMESPACES: "default"}).watch_namespaces == ("default",)
    assert settings.load({}).watch_namespaces is None


def test_not_enrolled_message_gives_the_exact_command_and_the_api_servers_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.client.exceptions import ApiException

    from pfslayout.operator import enrollment

    monkeypatch.setenv("PFSLAYOUT_NAMESPACE_ROLE", "pfs-namespace")
    monkeypatch.setenv("PFSLAYOUT_SERVICE_ACCOUNT", "pfs-system:pfs")
    err = ApiException(status=403, reason="Forbidden")
    err.body = '{"message": "configmaps is forbidden: User \\"x\\" cannot create resource \\"configmaps\\""}'
    assert enrollment.forbidden(err) and not enrollment.forbidden(ApiException(status=404))
    text = enrollment.message("batch-7", err)
    assert "`kubectl -n batch-7 create rolebinding pfs-layout-operator --clusterrole=pfs-namespace " \
           "--serviceaccount=pfs-system:pfs`" in text
    assert text.endswith('(API server: configmaps is forbidden: User "x" cannot create resource "configmaps")')
    err.body = "not json"
    assert enrollment.message("batch-7", err).endswith("(API server: Forbidden)")


def test_kopf_filter_reads_the_process_setting_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.WATCH_NAMESPACES, "batch-*")
    assert scope.in_scope("batch-7") and not scope.in_scope("default")
    assert scope.in_scope(None)  # cluster-scoped objects
    assert scope.in_scope(namespace="batch-1", body={}, meta={})  # Kopf passes its kwargs along
    monkeypatch.setenv(settings.WATCH_NAMESPACES, "*")
    assert not scope.in_scope("default")  # read once: the chart never changes it under a process
