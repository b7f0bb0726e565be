"""`onnxc serve`: the inference system around compiled models.

The Open Inference Protocol (KServe v2) over HTTP and gRPC, with Triton's repository,
statistics and model-configuration extensions, so that tritonclient and perf_analyzer work
unchanged; a model repository with versions, canary weights and rollback; a dynamic batcher;
Prometheus metrics; and a Ray Serve engine for more replicas. The protocol front ends
(http_app, grpc_service) only translate: every decision lives in the core (server_core).
"""
