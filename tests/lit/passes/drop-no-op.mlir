// RUN: onnxc-opt %s -p drop-no-op --split-input-file | filecheck %s

func.func @identity_dropout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.identity(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.dropout(%0) {ratio = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.relu(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @identity_dropout(
// CHECK-NEXT:    %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3xf32>

// -----

func.func @one_part(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.split(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.concat(%x) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @one_part(
// CHECK-NEXT:    func.return %x, %x : tensor<2x3xf32>, tensor<2x3xf32>

// -----

func.func @same_shape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.reshape(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.pad(%x) {pads = array<i64: 0, 0, 0, 0>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ones = graph.constant_of_shape {value = dense<1.000000e+00> : tensor<1xf32>} : tensor<2x3xf32>
  %2 = graph.mul(%x, %ones) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @same_shape(
// CHECK-NEXT:    func.return %x, %x, %x : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>

// -----

// Negative: a real split, a real concat, a real pad and an Expand that grows the tensor stay.
func.func @not_no_ops(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<2x5xf32>, tensor<2x2x3xf32>) {
  %0, %1 = graph.split(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  %2 = graph.concat(%x, %x) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %3 = graph.pad(%x) {pads = array<i64: 0, 1, 0, 1>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %ones = graph.constant_of_shape {value = dense<1.000000e+00> : tensor<1xf32>} : tensor<2x2x3xf32>
  %4 = graph.mul(%x, %ones) : (tensor<2x3xf32>, tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
  func.return %0, %1, %2, %3, %4 : tensor<2x1xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<2x5xf32>, tensor<2x2x3xf32>
}
// CHECK-LABEL: func.func @not_no_ops(
// CHECK-NEXT:    %0, %1 = graph.split(%x)
// CHECK-NEXT:    %2 = graph.concat(%x, %x)
// CHECK-NEXT:    %3 = graph.pad(%x)
// CHECK-NEXT:    %ones = graph.constant_of_shape
// CHECK-NEXT:    %4 = graph.mul(%x, %ones)
