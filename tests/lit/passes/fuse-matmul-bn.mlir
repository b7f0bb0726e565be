// RUN: onnxc-opt %s -p fuse-matmul-bn --split-input-file | filecheck %s

// BN over the columns of a MatMul with constant weights folds into one Gemm:
// s = gamma / sqrt(var + eps) = [2, 1]; B' = B * s per column; C' = beta - mean * s.
func.func @matmul_bn(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = graph.constant {value = dense<[[1.0, 1.0], [2.0, 3.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %gamma = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %m = graph.matmul(%a, %b) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %y = graph.batch_normalization(%m, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @matmul_bn(
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<{{\[\[}}2.000000e+00, 1.000000e+00], [4.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG:     %[[C:.*]] = graph.constant {value = dense<[-1.000000e+00, 0.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.gemm(%a, %[[B]], %[[C]]) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64}
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Non-constant weights cannot absorb the BN.
func.func @matmul_bn_dynamic(%a: tensor<3x2xf32>, %b: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %p = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %m = graph.matmul(%a, %b) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %y = graph.batch_normalization(%m, %p, %p, %p, %p) {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @matmul_bn_dynamic(
// CHECK:         graph.batch_normalization
