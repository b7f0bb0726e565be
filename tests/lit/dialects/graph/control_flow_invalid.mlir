// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL

// One case per verifier rule of graph.if and graph.loop (graph_control.py); no chunk may verify.
// ALL-FAIL-NOT: builtin.module {

%c, %x = "test.op"() : () -> (tensor<2xi1>, tensor<3xf32>)
%y = graph.if(%c) {
  graph.yield %x : tensor<3xf32>
} else {
  graph.yield %x : tensor<3xf32>
} : (tensor<2xi1>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.if: the condition must be one i1, not tensor<2xi1>

// -----

%c, %x, %z = "test.op"() : () -> (tensor<i1>, tensor<3xf32>, tensor<4xf32>)
%y = graph.if(%c) {
  graph.yield %x : tensor<3xf32>
} else {
  graph.yield %z : tensor<4xf32>
} : (tensor<i1>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.if: the else region yields (tensor<4xf32>), the op returns (tensor<3xf32>)

// -----

%n, %c, %x = "test.op"() : () -> (tensor<i64>, tensor<i1>, tensor<3xf32>)
%v = graph.loop(%n, %c, %x) {
^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<3xf32>):
  %w = graph.concat(%acc, %acc) {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
  graph.yield %go, %w : tensor<i1>, tensor<6xf32>
} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.loop: the body yields (tensor<6xf32>) for carried values of types (tensor<3xf32>)

// -----

%n, %c, %x = "test.op"() : () -> (tensor<i64>, tensor<i1>, tensor<3xf32>)
%v, %vs = graph.loop(%n, %c, %x) {
^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<3xf32>):
  graph.yield %go, %acc, %acc : tensor<i1>, tensor<3xf32>, tensor<3xf32>
} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>)
// CHECK: Operation does not verify: graph.loop: scan outputs need a known iteration count

// -----

%n, %c, %x = "test.op"() : () -> (tensor<i64>, tensor<i1>, tensor<3xf32>)
%v, %vs = graph.loop(%n, %c, %x) {
^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<3xf32>):
  graph.yield %go, %acc, %acc : tensor<i1>, tensor<3xf32>, tensor<3xf32>
} {iterations = 5 : i64} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>)
// CHECK: Operation does not verify: graph.loop: scan output 0 is tensor<4x3xf32>, expected tensor<5x3xf32>

// -----

%n, %c, %x = "test.op"() : () -> (tensor<i64>, tensor<i1>, tensor<3xf32>)
%v = graph.loop(%n, %c, %x) {
^bb0(%i: tensor<i64>, %acc: tensor<3xf32>):
  graph.yield %c, %acc : tensor<i1>, tensor<3xf32>
} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.loop: the body takes (tensor<i64>, tensor<3xf32>), expected (tensor<i64>, tensor<i1>, tensor<3xf32>)
