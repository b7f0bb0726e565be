// RUN: onnxc-opt %s -p reassociate-constants --split-input-file | filecheck %s

// (c1 + x) + c2 -> x + (c1 + c2); (x * c1) * c2 -> x * (c1 * c2).
func.func @reassociate(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %c1 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %c2 = graph.constant {value = dense<10.0> : tensor<f32>} : tensor<f32>
  %0 = graph.add(%c1, %x) : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = graph.add(%0, %c2) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %2 = graph.mul(%x, %c2) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %3 = graph.mul(%2, %c1) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %1, %3 : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @reassociate(
// CHECK-DAG:     %[[A:.*]] = graph.constant {value = dense<[1.100000e+01, 1.200000e+01]> : tensor<2xf32>}
// CHECK-DAG:     %[[M:.*]] = graph.constant {value = dense<[1.000000e+01, 2.000000e+01]> : tensor<2xf32>}
// CHECK-DAG:     %[[S:.*]] = graph.add(%x, %[[A]])
// CHECK-DAG:     %[[P:.*]] = graph.mul(%x, %[[M]])
// CHECK:         func.return %[[S]], %[[P]]

// -----

// The inner sum is used elsewhere, and mixed add/mul do not reassociate.
func.func @keep(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %c = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = graph.add(%0, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = graph.mul(%0, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @keep(
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %0 = graph.add(%x, %c)
// CHECK-NEXT:    %1 = graph.add(%0, %c)
// CHECK-NEXT:    %2 = graph.mul(%0, %c)

// -----

// Float constants that would overflow or underflow when merged stay apart: x * 1e30 * 1e30
// is finite for x = 1e-40 but x * inf is not; x * 1e-30 * 1e-30 is nonzero for x = 1e30,
// x * 0 is not; (x + 3e38) + 3e38 is finite for x = -3e38. Integers wrap and always merge.
func.func @keep_range(%x: tensor<2xf32>, %i: tensor<2xi32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>) {
  %big = graph.constant {value = dense<1.0e+30> : tensor<f32>} : tensor<f32>
  %small = graph.constant {value = dense<1.0e-30> : tensor<f32>} : tensor<f32>
  %max = graph.constant {value = dense<3.0e+38> : tensor<f32>} : tensor<f32>
  %ci = graph.constant {value = dense<2147483647> : tensor<i32>} : tensor<i32>
  %0 = graph.mul(%x, %big) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = graph.mul(%0, %big) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %2 = graph.mul(%x, %small) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %3 = graph.mul(%2, %small) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = graph.add(%x, %max) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %5 = graph.add(%4, %max) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %6 = graph.add(%i, %ci) : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  %7 = graph.add(%6, %ci) : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  func.return %1, %3, %5, %7 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>
}
// CHECK-LABEL: func.func @keep_range(
// CHECK:         %1 = graph.mul(%0, %big)
// CHECK:         %3 = graph.mul(%2, %small)
// CHECK:         %5 = graph.add(%4, %max)
// CHECK:         %[[W:.*]] = graph.constant {value = dense<-2> : tensor<i32>}
// CHECK-NEXT:    %[[I:.*]] = graph.add(%i, %[[W]])
// CHECK-NEXT:    func.return %1, %3, %5, %[[I]]
