"""Every setting of the operator process, read from the environment once and validated together.

The chart sets these variables (docs/operator.md lists them); a local operator (the e2e tier's) sets them
by hand. `current()` reads them on first use — the entry module (`main.py`) asks first, at import, so a
malformed value stops the operator before Kopf starts, with one line per bad variable naming it and the
values it accepts (`SettingsError`). Every other module takes its values from the `Settings` returned,
never from `os.environ`. `configure()` turns them into Kopf's own settings.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import math
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import kopf

from pfslayout.errors import InputError
from pfslayout.images import DEFAULT_MPI_IMAGE, DEFAULT_OPERATOR_IMAGE, DEFAULT_ORANGEFS_IMAGE
from pfslayout.kinds.costcalibration.probe_slot import MODES as PROBING_MODES
from pfslayout.naming import DEFAULT_CLUSTER_DOMAIN

T = TypeVar("T")

PREFIX = "pfslayout.io"
# Kopf's bookkeeping annotations live in their own subdomain: Kopf drops every annotation under its
# storage prefix from the diff it reacts to, and users' `pfslayout.io/...` annotations (e.g. the
# scale-down consent) must count as changes.
STORAGE_PREFIX = f"operator.{PREFIX}"
PULL_POLICIES = ("IfNotPresent", "Always", "Never")
DEFAULT_LAYOUT_RECHECK_S = 900.0  # seconds between drift checks of a LayoutPolicy's hints
WATCH_NAMESPACES = "PFSLAYOUT_WATCH_NAMESPACES"
# A namespace name, or a glob of one with * and ? (fnmatch, case-sensitive).
_NAMESPACE_ENTRY = re.compile(r"^[a-z0-9*?]([-a-z0-9*?]{0,61}[a-z0-9*?])?$")
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class SettingsError(ValueError):
    """One or more malformed settings: `str()` is one line per variable, each naming it and the fix."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class WebhookSettings:
    """The admission webhook's server and upkeep (admission/upkeep.py), when the chart enables it."""
    host: str
    port: int
    cert_dir: Path
    certs: str  # "operator" or "mounted"
    scope: str  # "managed" or "fixed"
    namespace: str
    service: str
    secret: str
    configuration: str
    serving_days: float
    renew_before: dt.timedelta
    sync_s: float

    @property
    def certfile(self) -> Path:
        return self.cert_dir / "tls.crt"

    @property
    def keyfile(self) -> Path:
        return self.cert_dir / "tls.key"

    def dns_names(self) -> list[str]:
        return [f"{self.service}.{self.namespace}.svc", f"{self.service}.{self.namespace}.svc.cluster.local"]


@dataclass(frozen=True)
class Settings:
    watch_namespaces: tuple[str, ...] | None  # None: every namespace (scope.py)
    watch_server_timeout: int  # whole seconds: it becomes the watch's integer `timeoutSeconds`
    watch_client_timeout: float
    watch_connect_timeout: float
    request_timeout: float
    retry_s: float  # Kopf's backoff of every retried handler and timer (its default, 60 s, is a minute lost)
    forbidden_retry_s: float  # a reconcile the API server refused (403, namespace not enrolled)
    resync_s: float
    server_poll_s: float  # how often the server pods of a cluster not Ready are looked at (stuck images)
    calibration_poll_s: float
    calibration_probing: str  # "exclusive": one CostCalibration probes at a time (probe_slot.py); "concurrent"
    layout_poll_s: float
    layout_recheck_s: float
    peering_lifetime_s: float  # a replica's peering record without a keep-alive: the failover after a crash
    metrics_addr: tuple[str, int] | None
    cluster_domain: str
    # The images of the objects the operator makes when theirs names none (one place: the chart's values
    # `images.orangefs` and `images.mpi`): OrangeFS servers, toolboxes, hint and wipe Jobs; calibration
    # probes and the shim's init container.
    orangefs_image: str
    mpi_image: str
    operator_image: str
    operator_image_pull_policy: str
    namespace_role: str
    service_account: str
    reporting_instance: str  # Events without one are rejected (422) by the events API
    webhook: WebhookSettings | None


def parse_namespaces(raw: str | None) -> tuple[str, ...] | None:
    """PFSLAYOUT_WATCH_NAMESPACES' comma-separated entries; None (every namespace) when unset, empty or "*"."""
    entries = tuple(e.strip() for e in (raw or "").split(",") if e.strip())
    if not entries or "*" in entries:
        return None
    for e in entries:
        if not _NAMESPACE_ENTRY.match(e):
            raise InputError(WATCH_NAMESPACES, f"{e!r} is neither a namespace name nor a glob of one",
                             "give names like 'batch' or globs like 'batch-*', separated by commas")
    return entries


def parse_addr(var: str, raw: str, example: str) -> tuple[str, int]:
    host, sep, port = raw.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(var, f"{raw!r} is not HOST:PORT", f"set e.g. {example}")
    return host or "0.0.0.0", int(port)  # a pod listens on its own interface


class _Reader:
    """Reads variables from `env`, collecting every error instead of stopping at the first: a user fixing
    the chart's values sees all that is wrong at once."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.errors: list[str] = []

    def raw(self, var: str) -> str | None:
        return self.env.get(var) or None

    def checked(self, parse: Callable[[], T], fallback: T) -> T:
        try:
            return parse()
        except InputError as err:
            self.errors.append(str(err))
            return fallback

    def seconds(self, var: str, default: float) -> float:
        def parse() -> float:
            raw = self.raw(var)
            if raw is None:
                return default
            try:
                value = float(raw)
            except ValueError:
                raise InputError(var, f"{raw!r} is not a number of seconds",
                                 f"unset it or give e.g. {default:g}") from None
            if not (value > 0 and math.isfinite(value)):
                raise InputError(var, f"{raw!r} must be a positive number", f"unset it or give e.g. {default:g}")
            return value
        return self.checked(parse, default)

    def choice(self, var: str, default: str, allowed: tuple[str, ...]) -> str:
        def parse() -> str:
            value = self.raw(var) or default
            if value not in allowed:
                raise InputError(var, f"{value!r} is not one of {', '.join(allowed)}", f"set it to {allowed[0]}")
            return value
        return self.checked(parse, default)

    def required(self, var: str, because: str, default: str | None = None) -> str:
        def parse() -> str:
            value = self.raw(var) or default
            if not value:
                raise InputError(var, f"is required {because}",
                                 "install with the chart, or set it to what the chart would")
            return value
        return self.checked(parse, "")

    def dns_name(self, var: str, default: str) -> str:
        def parse() -> str:
            value = self.raw(var) or default
            if not _DNS_NAME.match(value):
                raise InputError(var, f"{value!r} is not a DNS name", f"unset it or give e.g. {default}")
            return value
        return self.checked(parse, default)


def _webhook(r: _Reader) -> WebhookSettings | None:
    addr = r.raw("PFSLAYOUT_WEBHOOK_ADDR")
    if addr is None:
        return None
    host, port = r.checked(lambda: parse_addr("PFSLAYOUT_WEBHOOK_ADDR", addr, "0.0.0.0:9443"), ("", 0))
    because = "when PFSLAYOUT_WEBHOOK_ADDR is set"
    return WebhookSettings(
        host=host, port=port,
        cert_dir=Path(r.required("PFSLAYOUT_WEBHOOK_CERT_DIR", because, "/tmp/pfslayout-webhook")),
        certs=r.choice("PFSLAYOUT_WEBHOOK_CERTS", "operator", ("operator", "mounted")),
        scope=r.choice("PFSLAYOUT_WEBHOOK_SCOPE", "managed", ("managed", "fixed")),
        namespace=r.required("POD_NAMESPACE", because), service=r.required("PFSLAYOUT_WEBHOOK_SERVICE", because),
        secret=r.required("PFSLAYOUT_WEBHOOK_SECRET", because),
        configuration=r.required("PFSLAYOUT_WEBHOOK_CONFIGURATION", because),
        serving_days=r.seconds("PFSLAYOUT_WEBHOOK_CERT_DAYS", 365),
        renew_before=dt.timedelta(days=r.seconds("PFSLAYOUT_WEBHOOK_RENEW_DAYS", 30)),
        sync_s=r.seconds("PFSLAYOUT_WEBHOOK_SYNC_SECONDS", 30))


def load(env: Mapping[str, str]) -> Settings:
    """The settings `env` gives; SettingsError naming every malformed variable."""
    r = _Reader(env)
    metrics = r.raw("PFSLAYOUT_METRICS_ADDR")
    server_timeout = math.ceil(r.seconds("PFSLAYOUT_WATCH_SERVER_TIMEOUT", 120))
    s = Settings(
        watch_namespaces=r.checked(lambda: parse_namespaces(r.raw(WATCH_NAMESPACES)), None),
        # The server ends each watch after its timeout; the client gives up slightly later (Kopf's default
        # watch never times out: a silently dropped connection would stall the operator forever).
        watch_server_timeout=server_timeout,
        watch_client_timeout=r.seconds("PFSLAYOUT_WATCH_CLIENT_TIMEOUT", server_timeout + 30),
        watch_connect_timeout=r.seconds("PFSLAYOUT_WATCH_CONNECT_TIMEOUT", 10),
        request_timeout=r.seconds("PFSLAYOUT_REQUEST_TIMEOUT", 60),
        retry_s=r.seconds("PFSLAYOUT_RETRY_SECONDS", 5),
        # Retrying cannot help until an admin acts: slowly (the e2e operator shortens it to see enrollment take).
        forbidden_retry_s=r.seconds("PFSLAYOUT_FORBIDDEN_RETRY_SECONDS", 60),
        resync_s=r.seconds("PFSLAYOUT_RESYNC_SECONDS", 300),
        server_poll_s=r.seconds("PFSLAYOUT_SERVER_POLL_SECONDS", 10),
        calibration_poll_s=r.seconds("PFSLAYOUT_CALIBRATION_POLL_SECONDS", 5),
        calibration_probing=r.choice("PFSLAYOUT_CALIBRATION_PROBING", "exclusive", PROBING_MODES),
        layout_poll_s=r.seconds("PFSLAYOUT_LAYOUT_POLL_SECONDS", 5),
        # The drift check: a hint Job per policy and period, the only work of an idle policy (about ten API
        # requests: the Job created, looked at, its pod listed and log read, the status written, the Job
        # deleted); 15 minutes keeps idle policies well under one request per policy and minute
        # (operator/bench/idle_policies.py, docs/operator.md "Driven by events").
        layout_recheck_s=r.seconds("PFSLAYOUT_LAYOUT_RECHECK_SECONDS", DEFAULT_LAYOUT_RECHECK_S),
        peering_lifetime_s=r.seconds("PFSLAYOUT_PEERING_LIFETIME_SECONDS", 15),
        metrics_addr=None if metrics is None else r.checked(
            lambda: parse_addr("PFSLAYOUT_METRICS_ADDR", metrics, "127.0.0.1:9090"), None),
        cluster_domain=r.dns_name("PFSLAYOUT_CLUSTER_DOMAIN", DEFAULT_CLUSTER_DOMAIN),
        orangefs_image=r.raw("PFSLAYOUT_ORANGEFS_IMAGE") or DEFAULT_ORANGEFS_IMAGE,
        mpi_image=r.raw("PFSLAYOUT_MPI_IMAGE") or DEFAULT_MPI_IMAGE,
        # the trace collector's `pfslayout summarise` step when the chart sets none
        operator_image=r.raw("PFSLAYOUT_OPERATOR_IMAGE") or DEFAULT_OPERATOR_IMAGE,
        operator_image_pull_policy=r.choice("PFSLAYOUT_OPERATOR_IMAGE_PULL_POLICY", "IfNotPresent", PULL_POLICIES),
        namespace_role=r.raw("PFSLAYOUT_NAMESPACE_ROLE") or "<release>-pfs-layout-operator-namespace",
        service_account=r.raw("PFSLAYOUT_SERVICE_ACCOUNT") or "<release namespace>:<service account>",
        reporting_instance=r.raw("POD_NAME") or socket.gethostname() or "pfs-layout-operator",
        webhook=_webhook(r))
    if r.errors:
        raise SettingsError(r.errors)
    return s


@functools.cache
def current() -> Settings:
    """This process's settings, read once (the chart sets the variables; they never change)."""
    return load(os.environ)


def configure(kopf_settings: kopf.OperatorSettings, s: Settings, finalizer: str, start_ns: int) -> None:
    """Kopf's settings from ours (`start_ns`: when this process started, time.time_ns()); only mutates the
    object, so a unit test can check every value."""
    kopf_settings.watching.server_timeout = s.watch_server_timeout
    kopf_settings.watching.client_timeout = s.watch_client_timeout
    kopf_settings.watching.connect_timeout = s.watch_connect_timeout
    kopf_settings.networking.request_timeout = s.request_timeout
    # Named after the served namespaces: operators of other scopes never remove it (operator/finalizer.py).
    kopf_settings.persistence.finalizer = finalizer
    kopf_settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=STORAGE_PREFIX)
    kopf_settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=STORAGE_PREFIX, key="last-handled-configuration")
    kopf_settings.posting.enabled = True
    kopf_settings.posting.level = logging.INFO
    kopf_settings.posting.reporting_component = "pfs-layout-operator"
    kopf_settings.posting.reporting_instance = s.reporting_instance
    kopf_settings.posting.event_name_prefix = "pfslayout-"
    kopf_settings.execution.max_workers = 8
    # Peering (`kopf run --peering=NAME`, the chart; docs/reliability.md): the oldest replica leads. Kopf pauses
    # every operator that sees a live peer of higher or the same priority, so each process takes its start
    # time, negated, in microseconds: distinct, and lower for the younger (a new pod of a rollout stands by
    # until the old leader hands over). A crashed leader's record lapses after its lifetime; each replica
    # renews its own 5-10 s before that (every 5-10 s at the default 15), logged only when it matters.
    kopf_settings.peering.priority = -(start_ns // 1000)
    kopf_settings.peering.lifetime = max(2, round(s.peering_lifetime_s))  # Kopf counts whole seconds
    kopf_settings.peering.stealth = True
