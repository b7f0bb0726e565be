// RUN: onnxc-opt %s -p fold-scalar-binary --split-input-file | filecheck %s

// A one-element constant as second operand becomes the `scalar` property.
func.func @mul_by_scalar(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = graph.constant {value = dense<5.000000e-01> : tensor<1xf32>} : tensor<1xf32>
  %y = graph.mul(%x, %c) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @mul_by_scalar(
// CHECK-NEXT:    %y = graph.mul_scalar(%x) {scalar = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %y

// -----

// Add commutes: a scalar first operand is taken too; Sub and integer Div keep their order.
func.func @scalar_first(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = graph.constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %a = graph.add(%c, %x) : (tensor<i64>, tensor<4xi64>) -> tensor<4xi64>
  %d = graph.div(%a, %c) : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  func.return %a, %d : tensor<4xi64>, tensor<4xi64>
}
// CHECK-LABEL: func.func @scalar_first(
// CHECK-NEXT:    %a = graph.add_scalar(%x) {scalar = 3.000000e+00 : f64} : (tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    %d = graph.div_scalar(%a) {scalar = 3.000000e+00 : f64} : (tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    func.return %a, %d

// -----

// Negative: a scalar first operand of Sub, a non-scalar constant, and a scalar that would
// widen the result's rank stay as they are.
func.func @not_scalar(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>) {
  %c = graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %v = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %w = graph.constant {value = dense<2.0> : tensor<1x1xf32>} : tensor<1x1xf32>
  %s = graph.sub(%c, %x) : (tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
  %m = graph.mul(%x, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %r = graph.add(%x, %w) : (tensor<3xf32>, tensor<1x1xf32>) -> tensor<1x3xf32>
  func.return %s, %m, %r : tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>
}
// CHECK-LABEL: func.func @not_scalar(
// CHECK:         %s = graph.sub(%c, %x)
// CHECK-NEXT:    %m = graph.mul(%x, %v)
// CHECK-NEXT:    %r = graph.add(%x, %w)
// CHECK-NEXT:    func.return %s, %m, %r
