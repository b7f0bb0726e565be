// RUN: onnxc-opt %s -p fuse-elementwise --split-input-file | filecheck %s

// A tree of elementwise ops (a bias add, a residual add, relu6) becomes one op.
func.func @tree(%x: tensor<1x2x3x3xf32>, %r: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %b = graph.constant {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %0 = graph.add(%x, %b) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = graph.sigmoid(%r) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %2 = graph.mul(%0, %1) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %3 = graph.clip(%2) {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %3 : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @tree(
// CHECK:         %{{.*}} = graph.fused_elementwise(%x, %b, %r) {steps = ["add %0 %1", "sigmoid %2", "mul %3 %4", "clip %5 0.0 6.0"]} : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NOT:     graph.add
// CHECK-NEXT:    func.return

// -----

// An intermediate with a second user, a producer the consumer would broadcast, and
// integer tensors all stay separate ops.
func.func @no_fusion(%x: tensor<4xf32>, %y: tensor<3x4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<4xi32>) {
  %0 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.exp(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.add(%2, %y) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = graph.neg(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %5 = graph.abs(%4) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1, %3, %5 : tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @no_fusion(
// CHECK-NOT:     graph.fused_elementwise
// CHECK:         func.return

// -----

// A chain becomes one op in one rewrite at its root; an input read by every step is one
// operand.
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.add(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.add(%0, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = graph.relu(%1) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = graph.add(%2, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %3 : tensor<8xf32>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %{{.*}} = graph.fused_elementwise(%x) {steps = ["add %0 %0", "add %1 %0", "relu %2", "add %3 %0"]} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    func.return

// -----

// A fused op takes in fusable producers and the fused ops it reads; a value with a second
// user ends a tree (%1 is also returned), so two fused ops remain.
func.func @fused_operands(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.fused_elementwise(%x) {steps = ["neg %0", "exp %1"]} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul(%0, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.tanh(%y) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.fused_elementwise(%1, %2) {steps = ["sub %0 %1"]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.abs(%3) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %4 : tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @fused_operands(
// CHECK-NEXT:    %[[M:.*]] = graph.fused_elementwise(%x, %y) {steps = ["neg %0", "exp %2", "mul %3 %1"]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.fused_elementwise(%y, %[[M]]) {steps = ["tanh %0", "sub %1 %2", "abs %3"]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[M]], %[[R]]
