// RUN: onnxc-opt %s -p bn-to-scale --split-input-file | filecheck %s

// Inference BN with constant parameters: x * s + t with s = gamma / sqrt(var + eps) = [2, 1]
// and t = beta - mean * s = [-1, 3], shaped per channel (C x 1 x 1).
func.func @bn(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %gamma = graph.constant {value = dense<[2.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[1.0, 3.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<[1.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %y = graph.batch_normalization(%x, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @bn(
// CHECK-DAG:     %[[S:.*]] = graph.constant {value = dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK-DAG:     %[[T:.*]] = graph.constant {value = dense<{{\[\[\[}}-1.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK:         %[[M:.*]] = graph.mul(%x, %[[S]])
// CHECK-NEXT:    %[[Y:.*]] = graph.add(%[[M]], %[[T]])
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Statistics that are graph inputs are not known at compile time.
func.func @bn_dynamic(%x: tensor<1x2x3x3xf32>, %p: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %y = graph.batch_normalization(%x, %p, %p, %p, %p) {epsilon = 1.0e-05 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @bn_dynamic(
// CHECK-NEXT:    graph.batch_normalization
