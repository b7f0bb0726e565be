// RUN: onnxc-opt %s -p hoist-loop-invariants --split-input-file | filecheck %s

// Ops of a loop body that read only values from outside the loop move in front of it, chains
// included; what reads the iteration's values stays.
func.func @invariants(%w: tensor<4x3xf32>, %v0: tensor<4xf32>) -> tensor<4xf32> {
  %n = graph.constant {value = dense<5> : tensor<i64>} : tensor<i64>
  %t = graph.constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %v = "graph.loop"(%n, %t, %v0) <{iterations = 5 : i64}> ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<4xf32>):
    %wt = graph.transpose(%w) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %row = graph.reduce_sum(%wt) {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<3x4xf32>) -> tensor<4xf32>
    %next = graph.add(%acc, %row) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %c, %next : tensor<i1>, tensor<4xf32>
  }) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %v : tensor<4xf32>
}
// CHECK-LABEL: func.func @invariants(
// CHECK:         %wt = graph.transpose(%w)
// CHECK-NEXT:    %row = graph.reduce_sum(%wt)
// CHECK-NEXT:    %v = graph.loop(%n, %t, %v0) {
// CHECK-NEXT:    ^{{.*}}(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<4xf32>):
// CHECK-NEXT:      %next = graph.add(%acc, %row)
// CHECK-NEXT:      graph.yield %c, %next

// -----

// A loop that may run no iteration keeps its invariants: hoisting would run them anyway.
func.func @maybe_never(%w: tensor<4x3xf32>, %go: tensor<i1>, %v0: tensor<4xf32>) -> tensor<4xf32> {
  %n = graph.constant {value = dense<5> : tensor<i64>} : tensor<i64>
  %v = "graph.loop"(%n, %go, %v0) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<4xf32>):
    %row = graph.reduce_sum(%w) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>
    %next = graph.add(%acc, %row) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %c, %next : tensor<i1>, tensor<4xf32>
  }) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %v : tensor<4xf32>
}
// CHECK-LABEL: func.func @maybe_never(
// CHECK:         %v = graph.loop(%n, %go, %v0) {
// CHECK-NEXT:    ^{{.*}}(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<4xf32>):
// CHECK-NEXT:      %row = graph.reduce_sum(%w)
