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
// CHECK:         %{{.*}} = graph.fused_elementwise(%r, %x, %b) {steps = ["sigmoid %0", "add %1 %2", "mul %4 %3", "clip %5 0.0 6.0"]} : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
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
