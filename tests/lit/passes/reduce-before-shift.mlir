// RUN: onnxc-opt %s -p reduce-before-shift --split-input-file | filecheck %s

// mean(x * c + 0) with c constant along the reduced axis: the scale runs on the reduced tensor.
func.func @scale_mean(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %c = graph.constant {value = dense<[[[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]], [[5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]]]> : tensor<2x1x4xf32>} : tensor<2x1x4xf32>
  %0 = graph.mul(%x, %c) : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %1 = graph.reduce_mean(%0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @scale_mean(
// CHECK:         %[[C:.*]] = graph.constant {{.*}} : tensor<2x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul(%[[R]], %[[C]]) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[M]]

// -----

// sum(x + s) = sum(x) + n * s, and sum(y * b) for a runtime b that is constant along the
// reduced axis (kept as a 1-dim).
func.func @shift_sum(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>, %b: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>) {
  %0 = graph.add_scalar(%x) {scalar = 1.500000e+00 : f64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = graph.reduce_sum(%0) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  %2 = graph.mul(%b, %y) : (tensor<2x1xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %3 = graph.reduce_sum(%2) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  func.return %1, %3 : tensor<2x1xf32>, tensor<2x1xf32>
}
// CHECK-LABEL: func.func @shift_sum(
// CHECK-NEXT:    %0 = graph.reduce_sum(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %1 = graph.add_scalar(%0) {scalar = 7.500000e+00 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %2 = graph.reduce_sum(%y) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %3 = graph.mul(%b, %2) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %1, %3

// -----

// Negative: c varies along the reduced axis; c / x is not linear in x; the product is also
// used elsewhere.
func.func @not_linear(%x: tensor<2x5xf32>, %c: tensor<2x5xf32>, %d: tensor<2x1xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2xf32>) {
  %0 = graph.mul(%x, %c) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = graph.reduce_sum(%0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x5xf32>) -> tensor<2xf32>
  %2 = graph.div(%d, %x) : (tensor<2x1xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %3 = graph.reduce_mean(%2) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x5xf32>) -> tensor<2xf32>
  %4 = graph.mul_scalar(%x) {scalar = 2.000000e+00 : f64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %5 = graph.reduce_sum(%4) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x5xf32>) -> tensor<2xf32>
  func.return %1, %3, %4, %5 : tensor<2xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @not_linear(
// CHECK-NEXT:    %0 = graph.mul(%x, %c)
// CHECK-NEXT:    %1 = graph.reduce_sum(%0)
// CHECK-NEXT:    %2 = graph.div(%d, %x)
// CHECK-NEXT:    %3 = graph.reduce_mean(%2)
// CHECK-NEXT:    %4 = graph.mul_scalar(%x)
// CHECK-NEXT:    %5 = graph.reduce_sum(%4)
