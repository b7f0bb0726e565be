// RUN: onnxc-opt %s -p fuse-bn-scale --split-input-file | filecheck %s

// Mul then Add by per-channel constants after a BN fold into its scale and bias:
// gamma' = gamma * 2 = [2, 4], beta' = beta * 2 + [1, 1] = [1, 3].
func.func @bn_mul_add(%x: tensor<1x2x2x2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %gamma = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %n = graph.batch_normalization(%x, %gamma, %beta, %mean, %var) {epsilon = 1.0e-05 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %m = graph.mul(%n, %two) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %y = graph.add(%m, %one) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @bn_mul_add(
// CHECK-DAG:     %[[G:.*]] = graph.constant {value = dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<[1.000000e+00, 3.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.batch_normalization(%x, %[[G]], %[[B]], %mean, %var)
// CHECK-NEXT:    func.return %[[Y]]

// -----

// The BN result is used twice: folding the multiplier would change the other use.
func.func @bn_shared(%x: tensor<1x2x2x2xf32>, %p: tensor<2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %gamma = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %n = graph.batch_normalization(%x, %gamma, %gamma, %p, %p) {epsilon = 1.0e-05 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %m = graph.mul(%n, %two) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  func.return %m, %n : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @bn_shared(
// CHECK:         graph.mul
