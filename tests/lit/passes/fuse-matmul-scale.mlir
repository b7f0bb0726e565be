// RUN: onnxc-opt %s -p fuse-matmul-scale --split-input-file | filecheck %s

// A scalar multiplier after a MatMul, or a scalar divisor before it, becomes alpha.
func.func @scale_after(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %s = graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = graph.mul(%m, %s) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @scale_after(
// CHECK-NEXT:    %y = graph.gemm(%a, %b) {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64}
// CHECK-NEXT:    func.return %y

// -----

func.func @scale_before(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %s = graph.constant {value = dense<4.0> : tensor<1xf32>} : tensor<1xf32>
  %q = graph.div(%a, %s) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %y = graph.gemm(%q, %b, %c) {alpha = 2.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @scale_before(
// CHECK-NEXT:    %y = graph.gemm(%a, %b, %c) {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64}
// CHECK-NEXT:    func.return %y

// -----

// A per-column scale is not a scalar; a scaled operand used elsewhere must stay.
func.func @no_scale(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xf32>) {
  %v = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %s = graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = graph.mul(%m, %v) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %q = graph.mul(%a, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %z = graph.matmul(%q, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y, %z, %q : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @no_scale(
// CHECK-NOT:     graph.gemm
// CHECK:         graph.matmul
