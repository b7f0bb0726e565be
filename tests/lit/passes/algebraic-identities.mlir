// RUN: onnxc-opt %s -p algebraic-identities --split-input-file | filecheck %s

// x+(-0), (-0)+x, x-(+0), x*1, x/1, x**1, neg(neg x), relu(relu x), max(x, x) all reduce
// to x (or to the inner relu); an integer x*0 becomes a zero constant.
func.func @identities(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>) {
  %nz = graph.constant {value = dense<-0.0> : tensor<3xf32>} : tensor<3xf32>
  %z = graph.constant {value = dense<0.0> : tensor<3xf32>} : tensor<3xf32>
  %o = graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %zi = graph.constant {value = dense<0> : tensor<i32>} : tensor<i32>
  %0 = graph.add(%nz, %x) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub(%0, %z) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul(%1, %o) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = graph.div(%2, %o) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %4 = graph.pow(%3, %o) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %5 = graph.neg(%4) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = graph.neg(%5) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = graph.relu(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = graph.relu(%7) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = graph.max(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = graph.mul(%i, %zi) : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  func.return %6, %8, %9, %10 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>
}
// CHECK-LABEL: func.func @identities(
// CHECK:         %[[R:.*]] = graph.relu(%x)
// CHECK-NOT:     graph.relu
// CHECK:         %[[Z:.*]] = graph.constant {value = dense<0> : tensor<2x3xi32>}
// CHECK-NEXT:    func.return %x, %[[R]], %x, %[[Z]]

// -----

// Not neutral: a zero that broadcasts x to a larger shape, float x * 0 (inf * 0 is NaN),
// x * 1 with one element 2.
func.func @not_identities(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %z = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %z1 = graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %o = graph.constant {value = dense<[1.0, 2.0, 1.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = graph.add(%x, %z) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.mul(%x, %z1) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = graph.mul(%x, %o) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @not_identities(
// CHECK:         %0 = graph.add(%x, %z)
// CHECK-NEXT:    %1 = graph.mul(%x, %z1)
// CHECK-NEXT:    %2 = graph.mul(%x, %o)

// -----

// Not neutral for -0.0: x + (+0.0) and (+0.0) + x turn -0.0 into +0.0, and so does
// x - (-0.0); a zero that is -0.0 in one element only is not neutral either. Integer
// zeros have no sign: i + 0 and i - 0 are i.
func.func @signed_zeros(%x: tensor<3xf32>, %i: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %z = graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %nz = graph.constant {value = dense<-0.0> : tensor<f32>} : tensor<f32>
  %mixed = graph.constant {value = dense<[-0.0, 0.0, -0.0]> : tensor<3xf32>} : tensor<3xf32>
  %zi = graph.constant {value = dense<0> : tensor<i32>} : tensor<i32>
  %0 = graph.add(%x, %z) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = graph.add(%z, %x) : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.sub(%x, %nz) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %3 = graph.add(%x, %mixed) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = graph.add(%i, %zi) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  %5 = graph.sub(%4, %zi) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  func.return %0, %1, %2, %3, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}
// CHECK-LABEL: func.func @signed_zeros(
// CHECK:         %0 = graph.add(%x, %z)
// CHECK-NEXT:    %1 = graph.add(%z, %x)
// CHECK-NEXT:    %2 = graph.sub(%x, %nz)
// CHECK-NEXT:    %3 = graph.add(%x, %mixed)
// CHECK-NEXT:    func.return %0, %1, %2, %3, %i
