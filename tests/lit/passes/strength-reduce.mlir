// RUN: onnxc-opt %s -p strength-reduce --split-input-file | filecheck %s

// x / 4 -> x * 0.25, pow(x, 2) -> x * x, pow(|x|, 0.5) -> sqrt |x|, pow(x, -1) -> 1 / x,
// exp(log(relu x)) -> relu x.
func.func @reduce(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %four = graph.constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<1xf32>} : tensor<1xf32>
  %m1 = graph.constant {value = dense<-1.0> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%x, %four) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = graph.pow(%x, %two) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %a = graph.abs(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.pow(%a, %half) : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  %3 = graph.pow(%x, %m1) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %r = graph.relu(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %l = graph.log(%r) : (tensor<3xf32>) -> tensor<3xf32>
  %4 = graph.exp(%l) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2, %3, %4 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @reduce(
// CHECK-DAG:     %[[Q:.*]] = graph.constant {value = dense<2.500000e-01> : tensor<f32>}
// CHECK-DAG:     %[[D:.*]] = graph.mul(%x, %[[Q]])
// CHECK-DAG:     %[[S:.*]] = graph.mul(%x, %x)
// CHECK-DAG:     %[[R:.*]] = graph.sqrt(%a)
// CHECK-DAG:     %[[I:.*]] = graph.reciprocal(%x)
// CHECK-DAG:     %r = graph.relu(%x)
// CHECK:         func.return %[[D]], %[[S]], %[[R]], %[[I]], %r

// -----

// Division by a constant containing 0, a non-constant exponent, exp(log x) of a possibly
// negative x, and integer division all stay.
func.func @keep(%x: tensor<3xf32>, %e: tensor<3xf32>, %i: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %c = graph.constant {value = dense<[1.0, 0.0, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %ci = graph.constant {value = dense<2> : tensor<i32>} : tensor<i32>
  %0 = graph.div(%x, %c) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = graph.pow(%x, %e) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = graph.log(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.exp(%l) : (tensor<3xf32>) -> tensor<3xf32>
  %3 = graph.div(%i, %ci) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  func.return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}
// CHECK-LABEL: func.func @keep(
// CHECK:         graph.div(%x, %c)
// CHECK-NEXT:    graph.pow(%x, %e)
// CHECK-NEXT:    graph.log(%x)
// CHECK-NEXT:    graph.exp(%l)
// CHECK-NEXT:    graph.div(%i, %ci)

// -----

// Exact only up to -0.0 and -inf, so kept: pow(x, 0.5) of an x that may be -0.0 or -inf
// (pow gives +0 and +inf, sqrt -0 and NaN), also after sqrt (sqrt(-0.0) = -0.0) or a clip
// at -0.0; exp(log x) of such an x (exp(log(-0.0)) = +0.0) and of a constant holding -0.0.
// pow(x * x, 0.5) is sqrt: x * x is never -0.0.
func.func @signed_zero_powers(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %c = graph.constant {value = dense<[1.0, -0.0, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = graph.pow(%x, %half) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %s = graph.sqrt(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = graph.pow(%s, %half) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %k = graph.clip(%x) {min = -0.000000e+00 : f32} : (tensor<3xf32>) -> tensor<3xf32>
  %l = graph.log(%k) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.exp(%l) : (tensor<3xf32>) -> tensor<3xf32>
  %ls = graph.log(%s) : (tensor<3xf32>) -> tensor<3xf32>
  %3 = graph.exp(%ls) : (tensor<3xf32>) -> tensor<3xf32>
  %lc = graph.log(%c) : (tensor<3xf32>) -> tensor<3xf32>
  %4 = graph.exp(%lc) : (tensor<3xf32>) -> tensor<3xf32>
  %sq = graph.mul(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %5 = graph.pow(%sq, %half) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @signed_zero_powers(
// CHECK:         %0 = graph.pow(%x, %half)
// CHECK:         %1 = graph.pow(%s, %half)
// CHECK:         %2 = graph.exp(%l)
// CHECK:         %3 = graph.exp(%ls)
// CHECK:         %4 = graph.exp(%lc)
// CHECK:         %[[R:.*]] = graph.sqrt(%sq)
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4, %[[R]]

// -----

// x / c stays when 1 / c is not a finite normal float: c = 1e-39 (subnormal, 1 / c = inf)
// and c = 3e38 (1 / c is subnormal). c = 0.5 becomes x * 2.
func.func @inverse_range(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %tiny = graph.constant {value = dense<1.0e-39> : tensor<f32>} : tensor<f32>
  %huge = graph.constant {value = dense<3.0e+38> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%x, %tiny) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = graph.div(%x, %huge) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = graph.div(%x, %half) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @inverse_range(
// CHECK:         %0 = graph.div(%x, %tiny)
// CHECK-NEXT:    %1 = graph.div(%x, %huge)
// CHECK:         %[[TWO:.*]] = graph.constant {value = dense<2.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %{{.*}} = graph.mul(%x, %[[TWO]])
