// RUN: onnxc-opt %s -p strength-reduce --split-input-file | filecheck %s

// x / 4 -> x * 0.25, pow(x, 2) -> x * x, pow(x, 0.5) -> sqrt x, pow(x, -1) -> 1 / x,
// exp(log(relu x)) -> relu x.
func.func @reduce(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %four = graph.constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<1xf32>} : tensor<1xf32>
  %m1 = graph.constant {value = dense<-1.0> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%x, %four) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = graph.pow(%x, %two) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = graph.pow(%x, %half) : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
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
// CHECK-DAG:     %[[R:.*]] = graph.sqrt(%x)
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
