// RUN: onnxc-opt %s -p fold-unsqueeze-const --split-input-file | filecheck %s

// Unsqueeze of a constant (a per-channel bias broadcast shape) is a new constant.
func.func @unsqueeze_bias(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %b = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %u = graph.unsqueeze(%b) {axes = array<i64: 1, 2>} : (tensor<2xf32>) -> tensor<2x1x1xf32>
  %y = graph.add(%x, %u) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @unsqueeze_bias(
// CHECK-NEXT:    %u = graph.constant {value = dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
// CHECK-NEXT:    %y = graph.add(%x, %u)
// CHECK-NEXT:    func.return %y

// -----

// Transpose and Cast of constants fold; the original stays while something still reads it.
func.func @transpose_cast(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %c = graph.constant {value = dense<[[1.5, 2.5], [3.5, 4.5]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %t = graph.transpose(%c) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %i = graph.cast(%t) : (tensor<2x2xf32>) -> tensor<2x2xi32>
  %y = graph.add(%x, %c) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y, %i : tensor<2x2xf32>, tensor<2x2xi32>
}
// CHECK-LABEL: func.func @transpose_cast(
// CHECK-NEXT:    %c = graph.constant {value = dense<{{\[\[}}1.500000e+00, 2.500000e+00], [3.500000e+00, 4.500000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT:    %i = graph.constant {value = dense<{{\[\[}}1, 3], [2, 4]]> : tensor<2x2xi32>} : tensor<2x2xi32>
// CHECK-NEXT:    %y = graph.add(%x, %c)
// CHECK-NEXT:    func.return %y, %i

// -----

// Negative: arithmetic on constants is fold-constant-ops' job, and a reshape of a runtime
// value stays.
func.func @not_layout(%x: tensor<2x2xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
  %a = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %n = graph.neg(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %r = graph.reshape(%x) : (tensor<2x2xf32>) -> tensor<4xf32>
  func.return %n, %r : tensor<2xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @not_layout(
// CHECK-NEXT:    %a = graph.constant
// CHECK-NEXT:    %n = graph.neg(%a)
// CHECK-NEXT:    %r = graph.reshape(%x)
// CHECK-NEXT:    func.return %n, %r
