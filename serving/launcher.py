"""`onnxc serve REPO`: the HTTP, gRPC and metrics listeners over one InferenceServer.

One process and one asyncio loop: uvicorn serves the Starlette app (http_app), grpc.aio the
GRPCInferenceService (grpc_service, when present), and a second uvicorn the Prometheus
registry the core records into. SIGTERM or SIGINT stops the listeners accepting, lets the
requests already accepted finish (the core refuses later ones UNAVAILABLE) and exits 0; a
second signal exits 1 at once, without waiting. Logs are one JSON object a line on stderr,
with no line per request unless --access-log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxc.errors import InvalidArgumentError

DESCRIPTION = (
    "Serve the models of a Triton-layout repository (REPO/<model>/[config.pbtxt], "
    "REPO/<model>/<version>/model.onnx or an `onnxc compile` directory) over the Open "
    "Inference Protocol: HTTP/REST (JSON and binary tensors) and gRPC, with Triton's "
    "repository, statistics and configuration extensions, and Prometheus metrics. Listens "
    "on loopback unless --host says otherwise; SIGTERM drains the requests in flight.")

log = logging.getLogger("onnxc.serving")


@dataclass
class ServeOptions:
    """What `onnxc serve` was asked for (the CLI's flags, for callers without argparse)."""

    repository: str
    host: str = "127.0.0.1"
    http_port: int = 8000
    grpc_port: int | None = 8001
    """None: no gRPC listener"""
    metrics_port: int | None = 8002
    """None: no metrics listener"""
    model_control_mode: str = "none"
    poll_interval_s: float = 5.0
    load_models: list[str] = field(default_factory=list)
    max_request_bytes: int = 64 << 20
    drain_timeout_s: float = 30.0
    access_log: bool = False
    log_level: str = "info"


def _port(text: str) -> int | None:
    """A TCP port; 0 picks a free one; -1 turns the listener off."""
    value = int(text)
    if value < -1 or value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0-65535, or -1 for none)")
    return None if value == -1 else value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` subcommand's flags (Triton's names where Triton has one)."""
    parser.add_argument("repository", metavar="REPO", help="the model repository folder")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, loopback only)")
    parser.add_argument("--http-port", type=_port, default=8000, metavar="PORT",
                        help="HTTP/REST port (default: 8000; 0: any free port)")
    parser.add_argument("--grpc-port", type=_port, default=8001, metavar="PORT",
                        help="gRPC port (default: 8001; -1: no gRPC)")
    parser.add_argument("--metrics-port", type=_port, default=8002, metavar="PORT",
                        help="Prometheus metrics port (default: 8002; -1: no metrics)")
    parser.add_argument("--model-control-mode", choices=("none", "poll", "explicit"),
                        default="none",
                        help="none: load every model at start; poll: also pick up changes "
                        "to the repository; explicit: load only --load-model and what the "
                        "repository API loads (default: none)")
    parser.add_argument("--poll-interval", type=_positive_float, default=5.0, metavar="S",
                        help="seconds between repository polls in poll mode (default: 5)")
    parser.add_argument("--load-model", action="append", default=[], metavar="M",
                        help="in explicit mode, a model to load at start (repeatable)")
    parser.add_argument("--max-request-bytes", type=_positive_int, default=64 << 20,
                        metavar="N", help="largest request body accepted, after "
                        "decompression (default: 67108864)")
    parser.add_argument("--drain-timeout", type=_positive_float, default=30.0, metavar="S",
                        help="on SIGTERM, how long to wait for requests in flight "
                        "(default: 30)")
    parser.add_argument("--access-log", action="store_true",
                        help="log one line per HTTP request (default: off)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                        default="info", help="structured log level (default: info)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local: this process serves (default); ray: each model "
                        "version is a Ray Serve deployment (serving/ray_engine.py)")
    ray = parser.add_argument_group("Ray engine (--engine ray)")
    ray.add_argument("--replicas", type=_positive_int, default=None, metavar="N",
                     help="replicas per model version")
    ray.add_argument("--autoscale", default=None, metavar="MIN:MAX",
                     help="autoscale replicas between MIN and MAX")
    ray.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="an existing Ray cluster (default: start one in this process)")
    parser.set_defaults(handler=serve_command)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    return ServeOptions(
        repository=args.repository, host=args.host, http_port=args.http_port,
        grpc_port=args.grpc_port, metrics_port=args.metrics_port,
        model_control_mode=args.model_control_mode, poll_interval_s=args.poll_interval,
        load_models=list(args.load_model), max_request_bytes=args.max_request_bytes,
        drain_timeout_s=args.drain_timeout, access_log=args.access_log,
        log_level=args.log_level)


def serve_command(args: argparse.Namespace) -> None:
    """The CLI handler: run until a signal; errors propagate to the CLI's one-line report."""
    if args.http_port is None:
        raise InvalidArgumentError("--http-port cannot be -1: HTTP is always served")
    configure_logging(args.log_level, access_log=args.access_log)
    if args.engine == "ray":
        from onnxc.serving import ray_engine  # Ray only when asked for

        ray_engine.serve_command(args)
        return
    if not asyncio.run(serve(options_from_args(args))):
        # stopped while a model compiled: its loader thread would hold the interpreter's
        # exit until the compile ends (the compile cache writes entries atomically)
        logging.shutdown()
        sys.stdout.flush()
        os._exit(0)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and the record's `extra` fields."""

    _STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self._STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, (str, int, float, bool)) else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(level: str, *, access_log: bool = False) -> None:
    """onnxc.serving's and uvicorn's loggers as JSON lines on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name, name_level in (("onnxc.serving", level), ("uvicorn.error", "warning"),
                             ("uvicorn.access", "info" if access_log else "warning")):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(name_level.upper())
        logger.propagate = False


def _listen(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket; an address in use is an error naming it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it a response's separate header and body writes wait out the client's delayed ACK
    # (40 ms a request)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise InvalidArgumentError(f"cannot listen on {host}:{port}: {err.strerror}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _uvicorn_server(app: Any, *, access_log: bool, drain_timeout_s: float) -> Any:
    """A uvicorn.Server that leaves signals to the launcher (it handles them for all three
    listeners) and configures no logging of its own. `access_log` must be the same for
    every server: a uvicorn.Config with it False empties the shared "uvicorn.access"
    logger's handlers."""
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    # idle keep-alive connections stay open a minute (uvicorn's 5 s default races clients
    # that pause between requests: a request sent as the server closes the connection fails)
    config = uvicorn.Config(app, lifespan="off", access_log=access_log, log_config=None,
                            proxy_headers=False, server_header=False, timeout_keep_alive=60,
                            timeout_graceful_shutdown=drain_timeout_s)
    return _Server(config)


async def serve(options: ServeOptions, *, started: asyncio.Event | None = None,
                stop: asyncio.Event | None = None) -> bool:
    """Serve until `stop` is set or SIGTERM/SIGINT arrives, then drain and return (False
    when that came before the models had loaded). `started` is set once every listener
    accepts (the ports are logged)."""
    from onnxc.serving.http_app import build_app
    from onnxc.serving.server_core import InferenceServer

    if not Path(options.repository).is_dir():
        raise InvalidArgumentError(f"the model repository '{options.repository}' is not a "
                                   f"directory")
    core = InferenceServer(
        options.repository, model_control_mode=options.model_control_mode,
        poll_interval_s=options.poll_interval_s,
        startup_models=options.load_models or None,
        max_request_bytes=options.max_request_bytes)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals_seen: list[int] = []

    def on_signal(signum: int) -> None:
        signals_seen.append(signum)
        name = signal.Signals(signum).name
        if len(signals_seen) > 1:  # asked twice: the user does not want to wait
            log.warning("second signal, exiting without draining",
                        extra={"event": "forced_exit", "signal": name})
            os._exit(1)
        log.info("signal received, draining", extra={"event": "signal", "signal": name})
        stop.set()

    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)

    http_servers: list[Any] = []
    tasks: list[asyncio.Task] = []
    loaded = False
    grpc_server = None
    try:
        http_socket = _listen(options.host, options.http_port)
        app = build_app(core, max_request_bytes=options.max_request_bytes)
        http = _uvicorn_server(app, access_log=options.access_log,
                               drain_timeout_s=options.drain_timeout_s)
        http_servers.append(http)
        tasks.append(asyncio.create_task(http.serve(sockets=[http_socket])))
        ports = {"http_port": http_socket.getsockname()[1]}
        if options.metrics_port is not None:
            from prometheus_client import make_asgi_app

            metrics_socket = _listen(options.host, options.metrics_port)
            metrics = _uvicorn_server(make_asgi_app(core.metrics_registry),
                                      access_log=options.access_log,
                                      drain_timeout_s=options.drain_timeout_s)
            http_servers.append(metrics)
            tasks.append(asyncio.create_task(metrics.serve(sockets=[metrics_socket])))
            ports["metrics_port"] = metrics_socket.getsockname()[1]
        if options.grpc_port is not None:
            grpc_server, grpc_port = await _start_grpc(core, options.host, options.grpc_port,
                                                       options.max_request_bytes)
            if grpc_server is not None:
                ports["grpc_port"] = grpc_port
        while not all(server.started for server in http_servers):
            if any(task.done() for task in tasks):  # a listener failed to start
                for task in tasks:
                    if task.done():
                        task.result()
            await asyncio.sleep(0.01)
        log.info("listening", extra={"event": "listening", "host": options.host, **ports})
        if started is not None:
            started.set()
        loaded = await _start_unless_stopped(core, stop)
        if loaded:
            log.info("started", extra={"event": "started", "ready": core.ready()})
            await stop.wait()
    finally:
        await _drain(core, http_servers, tasks, grpc_server, options.drain_timeout_s)
        for signum in installed:
            loop.remove_signal_handler(signum)
        log.info("stopped", extra={"event": "stopped"})
    return loaded


async def _start_unless_stopped(core: Any, stop: asyncio.Event) -> bool:
    """Load the models; a signal meanwhile abandons the loading (a long cold compile must
    not hold up a SIGTERM). False when stopped first."""
    loading = asyncio.create_task(core.start())
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({loading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if loading.done():
        loading.result()  # a failure to start propagates
        return True
    loading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loading
    log.info("stopped while loading models", extra={"event": "start_abandoned"})
    return False


async def _start_grpc(core: Any, host: str, port: int,
                      max_request_bytes: int) -> tuple[Any, int]:
    """H3's grpc.aio server, when grpc_service.py is there: (server, bound port)."""
    try:
        from onnxc.serving import grpc_service
    except ImportError as err:
        if err.name not in ("onnxc.serving.grpc_service",):
            raise
        log.warning("no gRPC service in this build", extra={"event": "grpc_missing"})
        return None, 0
    if port == 0:  # a free one, chosen here so that the `listening` line can name it
        with contextlib.closing(_listen(host, 0)) as probe:
            port = probe.getsockname()[1]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        built = grpc_service.build_grpc_server(core, address,
                                               max_message_bytes=max_request_bytes)
    except OSError as err:  # the port is taken
        raise InvalidArgumentError(str(err)) from None
    server, bound = built if isinstance(built, tuple) else (built, port)
    await server.start()
    return server, bound


async def _drain(core: Any, http_servers: list[Any], tasks: list[asyncio.Task],
                 grpc_server: Any, timeout_s: float) -> None:
    """Stop accepting everywhere and let every request already accepted finish (the core
    still serves them), then shut the core down (it refuses anything later with
    UNAVAILABLE and waits for its own work, such as batches in its queues)."""
    for server in http_servers:
        server.should_exit = True
    grpc_stopped = (asyncio.ensure_future(grpc_server.stop(grace=timeout_s))
                    if grpc_server is not None else None)
    if tasks:
        done, pending = await asyncio.wait(tasks, timeout=timeout_s + 5)
        for task in pending:
            task.cancel()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("listener failed", exc_info=task.exception(),
                          extra={"event": "listener_failed"})
    if grpc_stopped is not None:
        await grpc_stopped
    await core.shutdown(drain_timeout_s=timeout_s)
