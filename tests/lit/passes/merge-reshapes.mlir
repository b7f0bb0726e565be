// RUN: onnxc-opt %s -p merge-reshapes --split-input-file | filecheck %s

func.func @chain(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = graph.unsqueeze(%x) {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %1 = graph.flatten(%0) {axis = 3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<6x4xf32>
  %2 = graph.reshape(%1) : (tensor<6x4xf32>) -> tensor<24xf32>
  %3 = graph.reshape(%2) : (tensor<24xf32>) -> tensor<6x4xf32>
  func.return %3 : tensor<6x4xf32>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = graph.reshape(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    func.return %0

// -----

func.func @round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.reshape(%x) : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = graph.reshape(%0) : (tensor<6xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @round_trip(
// CHECK-NEXT:    func.return %x

// -----

// The opset<13 Softmax import form over axis 1 of a 1x1000x1x1 tensor (squeezenet): only
// one flattened dimension is > 1, so it is a softmax over that axis.
func.func @softmax_coercion(%x: tensor<1x10x1x1xf32>) -> tensor<1x10x1x1xf32> {
  %0 = graph.flatten(%x) {axis = 1 : i64} : (tensor<1x10x1x1xf32>) -> tensor<1x10xf32>
  %1 = graph.softmax(%0) {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32>
  %2 = graph.reshape(%1) : (tensor<1x10xf32>) -> tensor<1x10x1x1xf32>
  func.return %2 : tensor<1x10x1x1xf32>
}
// CHECK-LABEL: func.func @softmax_coercion(
// CHECK-NEXT:    %0 = graph.softmax(%x) {axis = 1 : i64} : (tensor<1x10x1x1xf32>) -> tensor<1x10x1x1xf32>
// CHECK-NEXT:    func.return %0

// -----

func.func @log_softmax_coercion(%x: tensor<2x1x5x1xf32>) -> tensor<2x1x5x1xf32> {
  %0 = graph.flatten(%x) {axis = 1 : i64} : (tensor<2x1x5x1xf32>) -> tensor<2x5xf32>
  %1 = graph.softmax(%0) {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %2 = graph.log(%1) : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %3 = graph.reshape(%2) : (tensor<2x5xf32>) -> tensor<2x1x5x1xf32>
  func.return %3 : tensor<2x1x5x1xf32>
}
// CHECK-LABEL: func.func @log_softmax_coercion(
// CHECK-NEXT:    %0 = graph.softmax(%x) {axis = 2 : i64} : (tensor<2x1x5x1xf32>) -> tensor<2x1x5x1xf32>
// CHECK-NEXT:    %1 = graph.log(%0)
// CHECK-NEXT:    func.return %1

// -----

// Negative: two flattened dims > 1 normalise jointly (not over one axis); the softmax result
// has another user.
func.func @joint_softmax(%x: tensor<1x3x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x12xf32>) {
  %0 = graph.flatten(%x) {axis = 1 : i64} : (tensor<1x3x4xf32>) -> tensor<1x12xf32>
  %1 = graph.softmax(%0) {axis = 1 : i64} : (tensor<1x12xf32>) -> tensor<1x12xf32>
  %2 = graph.reshape(%1) : (tensor<1x12xf32>) -> tensor<1x3x4xf32>
  func.return %2, %1 : tensor<1x3x4xf32>, tensor<1x12xf32>
}
// CHECK-LABEL: func.func @joint_softmax(
// CHECK-NEXT:    %0 = graph.flatten(%x)
// CHECK-NEXT:    %1 = graph.softmax(%0)
// CHECK-NEXT:    %2 = graph.reshape(%1)

// -----

// Negative: a reshape of a computed value is not a chain.
func.func @not_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.reshape(%0) : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %1 : tensor<6xf32>
}
// CHECK-LABEL: func.func @not_chain(
// CHECK-NEXT:    %0 = graph.relu(%x)
// CHECK-NEXT:    %1 = graph.reshape(%0)
