"""`onnxc serve REPO --engine ray`: the same repository and protocol, scaled out on Ray Serve.

The driver reads the repository as the local engine does (repository.scan, the version
policy) and deploys one Ray Serve application, "onnxc":
- one deployment per served model version (ray_replica.ModelVersionReplica: the version
  compiled in the replica through onnxc's compile cache, batched with `@serve.batch` from
  the config's dynamic_batching), with `num_replicas` (--replicas N) or an
  `autoscaling_config` (--autoscale MIN:MAX);
- the ingress (ray_ingress.OnnxcIngress: the local engine's core and http_app over the
  deployments' handles), served by Ray's HTTP proxy on --host/--http-port, with
  grpc_service on --grpc-port and the core's Prometheus metrics on --metrics-port in the
  ingress process.

On one machine the driver starts Ray (a loopback node; its files in a temporary folder);
with --ray-address it joins a cluster (`ray start --head` / `--address`, KubeRay), where the
repository must be readable at the same path on every node. `app_builder` is the same
application for `serve run` and KubeRay's RayService (docs/serving-ray.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnxc.errors import InvalidArgumentError, ModelLoadError
from onnxc.serving import repository
from onnxc.serving.launcher import ServeOptions
from onnxc.serving.ray_ingress import OnnxcIngress, version_key
from onnxc.serving.ray_replica import ModelVersionReplica, VersionSpec

log = logging.getLogger("onnxc.serving")

APP_NAME = "onnxc"
INGRESS_NAME = "onnxc-ingress"


@dataclass
class RayOptions(ServeOptions):
    """What the Ray engine is asked for: `onnxc serve`'s options (the listeners, the request
    limit, the drain) and the Ray ones (the CLI's flags, for callers without argparse)."""

    replicas: int | None = None
    """replicas per model version (None: 1 unless autoscale)"""
    autoscale: tuple[int, int] | None = None
    ray_address: str | None = None
    """None: start a single-node Ray in this process (drain_timeout_s: how long each
    replica may take to finish what it is running, Ray Serve's graceful_shutdown_timeout_s)"""
    replica_num_cpus: float = 0.0
    """CPUs each model replica reserves in Ray's scheduler (0: no reservation; give the
    onnxc threads a replica uses on a cluster whose autoscaler adds nodes on demand)"""


def parse_autoscale(text: str) -> tuple[int, int]:
    """(min, max) replicas of "MIN:MAX"; InvalidArgumentError naming the value otherwise."""
    low, sep, high = text.partition(":")
    try:
        bounds = (int(low), int(high)) if sep else None
    except ValueError:
        bounds = None
    if bounds is None or bounds[0] < 0 or bounds[1] < max(bounds[0], 1):
        raise InvalidArgumentError.expected("--autoscale", "MIN:MAX with 0 <= MIN <= MAX "
                                            "and MAX >= 1", text)
    return bounds


def scaling(options: RayOptions) -> dict[str, Any]:
    """The deployment options that size a version: num_replicas or autoscaling_config."""
    if options.autoscale is not None:
        if options.replicas is not None:
            raise InvalidArgumentError("--replicas and --autoscale exclude each other: give "
                                       "a fixed count or a MIN:MAX range")
        low, high = options.autoscale
        return {"autoscaling_config": {"min_replicas": low, "max_replicas": high,
                                       "initial_replicas": max(low, 1),
                                       "target_ongoing_requests": 2}}
    return {"num_replicas": options.replicas or 1}


def version_specs(repository_path: str | Path) -> list[VersionSpec]:
    """Every version the repository's policies serve (a model whose config does not parse
    has none: the ingress reports it, as the local engine does)."""
    path = Path(repository_path).resolve()
    specs = []
    for name, source in repository.scan(path).items():
        if source.error:
            continue
        config = None if source.config is None else source.config.SerializeToString()
        for version in repository.select_versions(source.config, list(source.versions)):
            specs.append(VersionSpec(name, version, str(source.versions[version].payload),
                                     str(source.path), config))
    return specs


def deployment_name(spec: VersionSpec) -> str:
    return f"{spec.model_name}-v{spec.version}"


def build_application(options: RayOptions, *, grpc_address: str | None = None,
                      metrics_port: int | None = None):
    """The Ray Serve application: the ingress bound to one deployment per version (gRPC
    and metrics listeners in the ingress when given)."""
    from ray import serve

    actor = {"num_cpus": options.replica_num_cpus}
    sizes = scaling(options)
    handles = {}
    for spec in version_specs(options.repository):
        deployment = serve.deployment(ModelVersionReplica, name=deployment_name(spec),
                                      ray_actor_options=actor, max_ongoing_requests=64,
                                      graceful_shutdown_timeout_s=options.drain_timeout_s,
                                      **sizes)
        handles[version_key(spec.model_name, spec.version)] = deployment.bind(spec)
    ingress = serve.deployment(serve.ingress()(OnnxcIngress), name=INGRESS_NAME,
                               num_replicas=1, ray_actor_options={"num_cpus": 0},
                               max_ongoing_requests=1024,
                               graceful_shutdown_timeout_s=options.drain_timeout_s)
    return ingress.bind(str(Path(options.repository).resolve()), handles,
                        {"max_request_bytes": options.max_request_bytes,
                         "drain_timeout_s": options.drain_timeout_s,
                         "grpc_address": grpc_address, "metrics_host": options.host,
                         "metrics_port": metrics_port})


def app_builder(args: dict[str, str]):
    """Ray Serve's application builder (`serve run onnxc.serving.ray_engine:app_builder
    repository=/models replicas=2`, or a RayService's import_path): the same application
    the CLI deploys, without gRPC (Ray's proxy serves HTTP)."""
    known = {"repository", "replicas", "autoscale", "max_request_bytes", "replica_num_cpus"}
    unknown = sorted(set(args) - known)
    if unknown or "repository" not in args:
        raise InvalidArgumentError(f"app_builder takes repository= (required) and "
                                   f"{sorted(known - {'repository'})}, got {sorted(args)}")
    options = RayOptions(
        repository=args["repository"],
        replicas=int(args["replicas"]) if "replicas" in args else None,
        autoscale=parse_autoscale(args["autoscale"]) if "autoscale" in args else None,
        max_request_bytes=int(args.get("max_request_bytes", 64 << 20)),
        replica_num_cpus=float(args.get("replica_num_cpus", 0)))
    return build_application(options)


def free_port(host: str) -> int:
    """A port free now on `host` (Ray's proxy takes a number, not a bound socket)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class RayEngine:
    """Ray (started here or joined) with the onnxc application deployed; `stop` undoes it."""

    def __init__(self, options: RayOptions):
        self.options = options
        self.http_port = options.http_port or free_port(options.host)
        self.grpc_port = None
        if options.grpc_port is not None:
            self.grpc_port = options.grpc_port or free_port(options.host)
        self.metrics_port = None
        if options.metrics_port is not None:
            self.metrics_port = options.metrics_port or free_port(options.host)
        self.started_ray = False
        self._tmp = None

    def start(self) -> None:
        """Start or join Ray, then deploy (`connect` and `deploy`)."""
        self.connect()
        self.deploy()

    def connect(self) -> None:
        """Start Ray on a loopback node, or join the cluster at ray_address."""
        import ray

        if not Path(self.options.repository).is_dir():
            raise ModelLoadError(f"model repository {self.options.repository} is not a "
                                 f"directory")
        if not ray.is_initialized():
            if self.options.ray_address:
                ray.init(address=self.options.ray_address, logging_level="WARNING",
                         log_to_driver=False)
            else:
                # short path: Ray's socket names must fit in 107 bytes
                self._tmp = tempfile.mkdtemp(prefix="onnxc-ray-", dir="/tmp")
                ray.init(_node_ip_address="127.0.0.1", include_dashboard=False,
                         _temp_dir=self._tmp, logging_level="WARNING", log_to_driver=False)
            self.started_ray = True

    def deploy(self) -> None:
        """Start Serve's proxy on host:http_port, deploy the application and wait until
        every replica has loaded its version (or reported why it could not)."""
        from ray import serve

        serve.start(http_options={"host": self.options.host, "port": self.http_port})
        grpc_address = None
        if self.grpc_port is not None:
            host = self.options.host
            grpc_address = f"[{host}]:{self.grpc_port}" if ":" in host else \
                f"{host}:{self.grpc_port}"
        serve.run(build_application(self.options, grpc_address=grpc_address,
                                    metrics_port=self.metrics_port),
                  name=APP_NAME, route_prefix="/")
        log.info("listening", extra={"event": "listening", "engine": "ray",
                                     "ray_temp_dir": self._tmp or "",
                                     "host": self.options.host, "http_port": self.http_port,
                                     **{name: port for name, port in (
                                         ("grpc_port", self.grpc_port),
                                         ("metrics_port", self.metrics_port))
                                        if port is not None}})

    def stop(self) -> None:
        """Delete the application (Serve drains its replicas); stop Ray if started here."""
        import ray
        from ray import serve

        try:
            if ray.is_initialized():
                serve.delete(APP_NAME)
        finally:
            if self.started_ray:
                serve.shutdown()
                ray.shutdown()
                self.started_ray = False
                if self._tmp is not None:  # Ray's session files and logs of this run
                    _wait_for_exit(self._tmp, timeout_s=10.0)
                    shutil.rmtree(self._tmp, ignore_errors=True)
        log.info("stopped", extra={"event": "stopped", "engine": "ray"})


def _wait_for_exit(temp_dir: str, timeout_s: float) -> None:
    """Wait (polling /proc: there is no event) until no process names Ray's folder: Ray's
    processes write their last logs after ray.shutdown returns, so the folder is removed
    only after them. No /proc (not Linux): no wait."""
    if not os.path.isdir("/proc"):
        return
    needle = temp_dir.encode()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    alive = needle in cmdline.read()
            except OSError:
                continue
            if alive:
                break
        if not alive:
            return
        time.sleep(0.1)


def options_from_args(args: argparse.Namespace) -> RayOptions:
    """RayOptions of `onnxc serve --engine ray`'s flags (launcher.add_arguments)."""
    if args.model_control_mode != "none":
        raise InvalidArgumentError(f"--model-control-mode {args.model_control_mode} is not "
                                   f"available with --engine ray: its deployments are made "
                                   f"at start (restart to pick up repository changes)")
    return RayOptions(
        repository=args.repository, host=args.host, http_port=args.http_port,
        grpc_port=args.grpc_port, metrics_port=args.metrics_port, replicas=args.replicas,
        autoscale=None if args.autoscale is None else parse_autoscale(args.autoscale),
        ray_address=args.ray_address, max_request_bytes=args.max_request_bytes,
        drain_timeout_s=args.drain_timeout)


def serve_command(args: argparse.Namespace) -> None:
    """`onnxc serve REPO --engine ray ...` (called by launcher.serve_command): deploy, serve
    until SIGTERM or SIGINT, then delete the application and stop Ray if started here."""
    options = options_from_args(args)
    scaling(options)  # a bad combination fails before Ray starts
    stop = threading.Event()
    engine = RayEngine(options)
    previous = {}
    try:
        engine.connect()
        # after ray.init, whose core worker installs its own SIGTERM handler (it aborts)
        previous = {signum: signal.signal(signum, lambda *_: stop.set())
                    for signum in (signal.SIGTERM, signal.SIGINT)}
        engine.deploy()
        log.info("started", extra={"event": "started", "engine": "ray"})
        stop.wait()
    finally:
        try:
            engine.stop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
