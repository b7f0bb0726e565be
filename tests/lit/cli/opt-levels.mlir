// -O runs a level's graph pipeline (the same list as onnxc.compile(opt_level=N));
// --print-pipeline prints it as --pass-pipeline text; -p adds passes after the level's;
// --stats and --verify-numerics report on stderr only.

// RUN: onnxc-opt %s -O0 | filecheck %s --check-prefix=O0
// RUN: onnxc-opt %s -O1 | filecheck %s --check-prefix=O1
// RUN: onnxc-opt -O1 --print-pipeline | filecheck %s --check-prefix=PIPELINE
// RUN: onnxc-opt %s -O2 --stats 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: onnxc-opt %s -O3 --verify-numerics 2>&1 >/dev/null | filecheck %s --check-prefix=VERIFY
// RUN: onnxc-opt -O1 -p dce --print-pipeline | filecheck %s --check-prefix=COMBINED
// RUN: onnxc-opt %s -O1 -p canonicalize | filecheck %s --check-prefix=O1

func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant {value = dense<[[[[1.0]], [[0.5]]], [[[-1.0]], [[2.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %z = graph.constant_of_shape {value = dense<0.25> : tensor<1xf32>} : tensor<2xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %u = graph.unsqueeze(%z) {axes = array<i64: 1, 2>} : (tensor<2xf32>) -> tensor<2x1x1xf32>
  %a = graph.add(%c, %u) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.relu(%a) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %r : tensor<1x2x4x4xf32>
}

// O0:      graph.constant_of_shape
// O0:      graph.conv
// O0-NEXT: graph.unsqueeze
// O0-NEXT: graph.add
// O0-NEXT: graph.relu

// O1-LABEL: func.func @main(
// O1-NOT:   graph.add
// O1-NOT:   graph.relu
// O1:       %{{.*}} = graph.conv(%x, %{{.*}}, %{{.*}}) {{{.*}}activation = "relu"
// O1-NEXT:  func.return

// PIPELINE: {{^}}builtin.module(fold-constant-ops,fold-axes-inputs,{{.*}},cse,hoist-loop-invariants,drop-orphans){{$}}

// STATS:      graph statistics: 4 -> 1 compute nodes
// STATS:      graph.conv {{ *}}1 {{ *}}1
// STATS:      pattern fires
// STATS-DAG:  fold-constant-ops: FoldConstantOp
// STATS-DAG:  fuse-conv-add:
// STATS-DAG:  fuse-activation:

// VERIFY: verify-numerics: {{[0-9]+}} passes
// VERIFY: no pass drifts

// COMBINED: {{^}}builtin.module(fold-constant-ops,{{.*}},hoist-loop-invariants,drop-orphans,dce){{$}}
