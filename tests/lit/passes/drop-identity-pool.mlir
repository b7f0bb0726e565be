// RUN: onnxc-opt %s -p drop-identity-pool --split-input-file | filecheck %s

func.func @unit_window(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %0 = graph.max_pool(%x) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.average_pool(%x) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0, %1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @unit_window(
// CHECK-NEXT:    func.return %x, %x

// -----

func.func @global_of_1x1(%x: tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.global_average_pool(%x) : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  func.return %0 : tensor<1x8x1x1xf32>
}
// CHECK-LABEL: func.func @global_of_1x1(
// CHECK-NEXT:    func.return %x

// -----

// Negative: a stride-2 1x1 pool subsamples and a 2x2 window averages.
func.func @real_pools(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x3x3xf32>) {
  %0 = graph.max_pool(%x) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %1 = graph.average_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1 : tensor<1x2x2x2xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @real_pools(
// CHECK-NEXT:    %0 = graph.max_pool(%x)
// CHECK-NEXT:    %1 = graph.average_pool(%x)
