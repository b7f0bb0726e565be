// RUN: onnxc-opt %s -p fold-axes-inputs --split-input-file | filecheck %s

// A constant shape operand that means the result type is dropped.
func.func @reshape_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %s = graph.constant {value = dense<[-1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %r = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @reshape_shape(
// CHECK-NEXT:    %r = graph.reshape(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %r

// -----

// Constant axes operands become the (normalised, sorted) axes property; the importer's
// choice among equivalent axes (squeeze 1 of 1x1x3) gives way to the model's.
func.func @squeeze_unsqueeze_axes(%x: tensor<2x3xf32>, %y: tensor<1x1x3xf32>) -> (tensor<2x1x3x1xf32>, tensor<1x3xf32>) {
  %a = graph.constant {value = dense<[-1, 1]> : tensor<2xi64>} : tensor<2xi64>
  %u = graph.unsqueeze(%x, %a) {axes = array<i64: 1, 3>} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x1x3x1xf32>
  %b = graph.constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %s = graph.squeeze(%y, %b) {axes = array<i64: 1>} : (tensor<1x1x3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
  func.return %u, %s : tensor<2x1x3x1xf32>, tensor<1x3xf32>
}
// CHECK-LABEL: func.func @squeeze_unsqueeze_axes(
// CHECK-NEXT:    %u = graph.unsqueeze(%x) {axes = array<i64: 1, 3>} : (tensor<2x3xf32>) -> tensor<2x1x3x1xf32>
// CHECK-NEXT:    %s = graph.squeeze(%y) {axes = array<i64: 0>} : (tensor<1x1x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    func.return %u, %s

// -----

// Negative: an operand computed at run time stays, and so does a constant that does not
// produce the result type (nothing proves what it means).
func.func @not_constant(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> (tensor<3x2xf32>, tensor<6x1xf32>) {
  %r = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %c = graph.constant {value = dense<[3, 2]> : tensor<2xi64>} : tensor<2xi64>
  %w = graph.reshape(%x, %c) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<6x1xf32>
  func.return %r, %w : tensor<3x2xf32>, tensor<6x1xf32>
}
// CHECK-LABEL: func.func @not_constant(
// CHECK-NEXT:    %r = graph.reshape(%x, %s)
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %w = graph.reshape(%x, %c)
// CHECK-NEXT:    func.return %r, %w
