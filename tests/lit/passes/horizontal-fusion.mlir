// RUN: onnxc-opt %s -p horizontal-fusion --split-input-file | filecheck %s

// Q/K/V projections of one activation (MatMul + bias Add each) -> one MatMul, one Add, Split.
func.func @qkv(%x: tensor<1x3x2xf32>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x1xf32>) {
  %wq = graph.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %wk = graph.constant {value = dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %wv = graph.constant {value = dense<[[9.0], [10.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %bq = graph.constant {value = dense<[0.1, 0.2]> : tensor<2xf32>} : tensor<2xf32>
  %bk = graph.constant {value = dense<[0.3, 0.4]> : tensor<2xf32>} : tensor<2xf32>
  %bv = graph.constant {value = dense<[0.5]> : tensor<1xf32>} : tensor<1xf32>
  %q0 = graph.matmul(%x, %wq) : (tensor<1x3x2xf32>, tensor<2x2xf32>) -> tensor<1x3x2xf32>
  %q = graph.add(%q0, %bq) : (tensor<1x3x2xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %k0 = graph.matmul(%x, %wk) : (tensor<1x3x2xf32>, tensor<2x2xf32>) -> tensor<1x3x2xf32>
  %k = graph.add(%bk, %k0) : (tensor<2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %v0 = graph.matmul(%x, %wv) : (tensor<1x3x2xf32>, tensor<2x1xf32>) -> tensor<1x3x1xf32>
  %v = graph.add(%v0, %bv) : (tensor<1x3x1xf32>, tensor<1xf32>) -> tensor<1x3x1xf32>
  func.return %q, %k, %v : tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x1xf32>
}
// CHECK-LABEL: func.func @qkv(
// CHECK:         %[[W:.*]] = graph.constant {value = dense<{{\[}}[1.000000e+00, 2.000000e+00, 5.000000e+00, 6.000000e+00, 9.000000e+00], [3.000000e+00, 4.000000e+00, 7.000000e+00, 8.000000e+00, 1.000000e+01]]> : tensor<2x5xf32>}
// CHECK:         %[[M:.*]] = graph.matmul(%x, %[[W]]) : (tensor<1x3x2xf32>, tensor<2x5xf32>) -> tensor<1x3x5xf32>
// CHECK:         %[[A:.*]] = graph.add(%[[M]], %{{.*}}) : (tensor<1x3x5xf32>, tensor<5xf32>) -> tensor<1x3x5xf32>
// CHECK-NEXT:    %[[Q:.*]], %[[K:.*]], %[[V:.*]] = graph.split(%[[A]]) {axis = 2 : i64} : (tensor<1x3x5xf32>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x1xf32>)
// CHECK-NEXT:    func.return %[[Q]], %[[K]], %[[V]]

// -----

// Two parallel 1x1 convs of an Inception block (one without bias) -> one conv + Split.
func.func @inception_1x1(%x: tensor<1x2x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w1 = graph.constant {value = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %b1 = graph.constant {value = dense<[0.5]> : tensor<1xf32>} : tensor<1xf32>
  %w2 = graph.constant {value = dense<[[[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %a = graph.conv(%x, %w1, %b1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %b = graph.conv(%x, %w2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %a, %b : tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @inception_1x1(
// CHECK:         %[[C:.*]] = graph.conv(%x, %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = graph.split(%[[C]]) {axis = 1 : i64} : (tensor<1x3x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>)
// CHECK-NEXT:    func.return %[[A]], %[[B]]

// -----

// Two nn.Linear on a 2-D input (Gemm transB = 1, one with transB = 0 and no bias).
func.func @linear_2d(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x1xf32>) {
  %w1 = graph.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %b1 = graph.constant {value = dense<[0.5, -0.5]> : tensor<2xf32>} : tensor<2xf32>
  %w2 = graph.constant {value = dense<[[5.0], [6.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %a = graph.gemm(%x, %w1, %b1) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %b = graph.gemm(%x, %w2) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>
  func.return %a, %b : tensor<3x2xf32>, tensor<3x1xf32>
}
// CHECK-LABEL: func.func @linear_2d(
// CHECK:         %[[W:.*]] = graph.constant {value = dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>}
// CHECK:         %[[G:.*]] = graph.gemm(%x, %[[W]], %{{.*}}) {{{.*}}transB = 0 : i64} : (tensor<3x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = graph.split(%[[G]]) {axis = 1 : i64}
// CHECK-NEXT:    func.return %[[A]], %[[B]]

// -----

// Negative: convs with different strides, and MatMuls of different inputs, stay apart.
func.func @not_siblings(%x: tensor<1x2x4x4xf32>, %y: tensor<3x2xf32>, %z: tensor<3x2xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = graph.constant {value = dense<1.000000e+00> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %m = graph.constant {value = dense<1.000000e+00> : tensor<2x2xf32>} : tensor<2x2xf32>
  %a = graph.conv(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
  %b = graph.conv(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x2xf32>
  %c = graph.matmul(%y, %m) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %d = graph.matmul(%z, %m) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  func.return %a, %b, %c, %d : tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
// CHECK-LABEL: func.func @not_siblings(
// CHECK-NOT:     graph.split
// CHECK:         graph.conv
// CHECK:         graph.conv
// CHECK:         graph.matmul
// CHECK:         graph.matmul
