// RUN: onnxc-opt %s -p broadcast-simplify --split-input-file | filecheck %s

// Expand (imported as x * ones(shape)) feeding only broadcasting ops that get the
// expanded shape from their other operand anyway: the users read x directly.
func.func @drop_expand(%x: tensor<1x4xf32>, %y: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : tensor<3x4xf32>
  %e = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = graph.add(%e, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.max(%y, %e, %y) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @drop_expand(
// CHECK-NEXT:    %0 = graph.add(%x, %y) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %1 = graph.max(%y, %x, %y) : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %0, %1

// -----

// The expanded tensor is returned, feeds a non-broadcasting op, or is the only source of
// the user's shape: the Expand stays.
func.func @keep_expand(%x: tensor<1x4xf32>, %s: tensor<1x1xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : tensor<3x4xf32>
  %e = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %f = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = graph.relu(%f) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %g = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.add(%g, %s) : (tensor<3x4xf32>, tensor<1x1xf32>) -> tensor<3x4xf32>
  func.return %e, %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @keep_expand(
// CHECK:         %e = graph.mul(%x, %ones)
// CHECK-NEXT:    %f = graph.mul(%x, %ones)
// CHECK-NEXT:    %0 = graph.relu(%f)
// CHECK-NEXT:    %g = graph.mul(%x, %ones)
// CHECK-NEXT:    %1 = graph.add(%g, %s)
