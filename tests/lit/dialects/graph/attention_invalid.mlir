// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL

// graph.attention's verifier rules for grouped-query heads and causal_offset; no chunk may
// verify.
// ALL-FAIL-NOT: builtin.module {

%q, %k = "test.op"() : () -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
%y = graph.attention(%q, %k, %k) {scale = 1.0 : f32, causal_offset = -1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK: Operation does not verify: graph.attention: causal_offset must be >= 0

// -----

%q, %k = "test.op"() : () -> (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>)
%y = graph.attention(%q, %k, %k) {scale = 1.0 : f32} : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32>
// CHECK: leading dimensions of query (1, 3, 4, 8), key (1, 2, 4, 8), value (1, 2, 4, 8) differ

// -----

%q, %k, %v = "test.op"() : () -> (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>)
%y = graph.attention(%q, %k, %v) {scale = 1.0 : f32} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK: leading dimensions of query (1, 4, 4, 8), key (1, 2, 4, 8), value (1, 4, 4, 8) differ

// -----

%q, %k = "test.op"() : () -> (tensor<2x4x4x8xf32>, tensor<1x2x4x8xf32>)
%y = graph.attention(%q, %k, %k) {scale = 1.0 : f32} : (tensor<2x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<2x4x4x8xf32>
// CHECK: leading dimensions of query (2, 4, 4, 8), key (1, 2, 4, 8), value (1, 2, 4, 8) differ

// -----

%q = "test.op"() : () -> tensor<1x2x4x8xf32>
%y = graph.attention(%q, %q, %q) {scale = 1.0 : f32, output_perm = array<i64: 0, 2, 2, 3>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
// CHECK: Operation does not verify: graph.attention: output_perm [0, 2, 2, 3] is not a permutation of rank 4

// -----

%q = "test.op"() : () -> tensor<1x2x4x8xf32>
%y = graph.attention(%q, %q, %q) {scale = 1.0 : f32, output_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK: Operation does not verify: graph.attention: result shapes [(1, 2, 4, 8)] differ from inferred [(1, 4, 2, 8)]
