// RUN: onnxc-opt %s -p fuse-binary-eltwise --split-input-file | filecheck %s

// x1 * 0.25 + x2 * 0.75 - x3 * 2 (a blend) -> one weighted_sum.
func.func @blend(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %k1 = graph.constant {value = dense<2.500000e-01> : tensor<f32>} : tensor<f32>
  %k2 = graph.constant {value = dense<7.500000e-01> : tensor<f32>} : tensor<f32>
  %k3 = graph.constant {value = dense<2.000000e+00> : tensor<1xf32>} : tensor<1xf32>
  %0 = graph.mul(%a, %k1) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = graph.mul(%k2, %b) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = graph.add(%0, %1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = graph.mul(%c, %k3) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %4 = graph.sub(%2, %3) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %4 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @blend(
// CHECK-NEXT:    %{{.*}} = graph.weighted_sum(%a, %b, %c) {coefficients = array<f64: 2.500000e-01, 7.500000e-01, -2.000000e+00>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return

// -----

// Negative: the scaled term is also returned, and a per-element (non-scalar) factor is not
// a coefficient.
func.func @not_absorbable(%a: tensor<4xf32>, %b: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %k = graph.constant {value = dense<3.000000e+00> : tensor<f32>} : tensor<f32>
  %0 = graph.mul(%a, %k) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.add(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.mul(%a, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.add(%2, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @not_absorbable(
// CHECK-NOT:     graph.weighted_sum
// CHECK:         graph.add
// CHECK:         graph.add
