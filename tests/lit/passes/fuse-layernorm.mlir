// RUN: onnxc-opt %s -p fuse-layernorm --split-input-file | filecheck %s

// PyTorch's decomposed nn.LayerNorm(4): ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt,
// Div, Mul gamma, Add beta.
func.func @torch_layernorm(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %two = graph.constant {value = dense<2.000000e+00> : tensor<f32>} : tensor<f32>
  %eps = graph.constant {value = dense<9.99999974E-6> : tensor<f32>} : tensor<f32>
  %gamma = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %beta = graph.constant {value = dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>} : tensor<4xf32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = graph.pow(%d, %two) : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %ve = graph.add(%var, %eps) : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %std = graph.sqrt(%ve) : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %n = graph.div(%d, %std) : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %g = graph.mul(%n, %gamma) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %y = graph.add(%beta, %g) : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @torch_layernorm(
// CHECK-NOT:     graph.reduce_mean
// CHECK:         %{{.*}} = graph.layer_normalization(%x, %{{.*}}, %{{.*}}) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NOT:     graph.div
// CHECK-NEXT:    func.return

// -----

// Over the last two axes, squared by Mul, no affine parameters.
func.func @two_axes_mul_square(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %eps = graph.constant {value = dense<1.000000e-03> : tensor<1xf32>} : tensor<1xf32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %sq = graph.mul(%d, %d) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %ve = graph.add(%eps, %var) : (tensor<1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %std = graph.sqrt(%ve) : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = graph.div(%d, %std) : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  func.return %n : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @two_axes_mul_square(
// CHECK:         graph.layer_normalization(%x, %{{.*}}) {axis = 1 : i64, epsilon = 1.000000e-03 : f32}
// CHECK-NEXT:    func.return

// -----

// Negative: the centred value is also returned, so fusing would compute it twice.
func.func @centred_value_escapes(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %two = graph.constant {value = dense<2.000000e+00> : tensor<f32>} : tensor<f32>
  %eps = graph.constant {value = dense<1.000000e-05> : tensor<f32>} : tensor<f32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %sq = graph.pow(%d, %two) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %ve = graph.add(%var, %eps) : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %std = graph.sqrt(%ve) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = graph.div(%d, %std) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %n, %d : tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @centred_value_escapes(
// CHECK-NOT:     graph.layer_normalization
// CHECK:         graph.div

// -----

// Negative: the variance is taken over another axis than the mean.
func.func @mismatched_axes(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %two = graph.constant {value = dense<2.000000e+00> : tensor<f32>} : tensor<f32>
  %eps = graph.constant {value = dense<1.000000e-05> : tensor<f32>} : tensor<f32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %sq = graph.pow(%d, %two) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 0, 1>, keepdims = 1 : i64} : (tensor<2x4xf32>) -> tensor<1x1xf32>
  %ve = graph.add(%var, %eps) : (tensor<1x1xf32>, tensor<f32>) -> tensor<1x1xf32>
  %std = graph.sqrt(%ve) : (tensor<1x1xf32>) -> tensor<1x1xf32>
  %n = graph.div(%d, %std) : (tensor<2x4xf32>, tensor<1x1xf32>) -> tensor<2x4xf32>
  func.return %n : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @mismatched_axes(
// CHECK-NOT:     graph.layer_normalization
// CHECK:         graph.div
