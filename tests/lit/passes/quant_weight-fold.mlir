// RUN: onnxc-opt %s -p fuse-qdq-linear,fold-constant-ops --split-input-file | filecheck %s

// The weight DQ of a product that stays float (its activation is not dequantized) folds
// into a plain f32 constant; the quantized product keeps the i8 constant itself.
func.func @float_consumer(%x: tensor<2x3xf32>, %q: tensor<2x3xui8>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %w = graph.constant {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>} : tensor<3x2xi8>
  %0 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>, zero_point = dense<[1, 0]> : tensor<2xi32>, axis = 1 : i64} : (tensor<3x2xi8>) -> tensor<3x2xf32>
  %1 = graph.matmul(%x, %0) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %2 = graph.dequantize_linear(%q) {scale = 5.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %3 = graph.matmul(%2, %0) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %1, %3 : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @float_consumer(
// CHECK-DAG:     %[[W:.*]] = graph.constant {value = dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>}
// CHECK-DAG:     %[[F:.*]] = graph.constant {value = dense<{{\[}}[0.000000e+00, 1.000000e+00], [5.000000e-01, 2.000000e+00], [1.000000e+00, 3.000000e+00]]> : tensor<3x2xf32>}
// CHECK-DAG:     graph.matmul(%x, %[[F]])
// CHECK-DAG:     graph.qlinear_matmul(%q, %[[W]]) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 1, 0>, output_scale = array<f32: 1.250000e-01, 2.500000e-01>}
// CHECK-NOT:     graph.dequantize_linear
