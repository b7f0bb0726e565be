// RUN: onnxc-opt %s -p merge-casts --split-input-file | filecheck %s

func.func @widening(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xi64>, tensor<4xf32>, tensor<4xf64>) {
  %0 = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xf64>
  %1 = graph.cast(%0) : (tensor<4xf64>) -> tensor<4xi64>
  %2 = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xf64>
  %3 = graph.cast(%2) : (tensor<4xf64>) -> tensor<4xf32>
  %4 = graph.cast(%i) : (tensor<4xi32>) -> tensor<4xi64>
  %5 = graph.cast(%4) : (tensor<4xi64>) -> tensor<4xf64>
  func.return %1, %3, %5 : tensor<4xi64>, tensor<4xf32>, tensor<4xf64>
}
// CHECK-LABEL: func.func @widening(
// CHECK-NEXT:    %0 = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xi64>
// CHECK-NEXT:    %1 = graph.cast(%i) : (tensor<4xi32>) -> tensor<4xf64>
// CHECK-NEXT:    func.return %0, %x, %1

// -----

// Negative: f32 -> i64 truncates, and i64 -> f32 rounds large integers.
func.func @lossy(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %0 = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xi64>
  %1 = graph.cast(%0) : (tensor<4xi64>) -> tensor<4xf32>
  %2 = graph.cast(%i) : (tensor<4xi64>) -> tensor<4xf32>
  %3 = graph.cast(%2) : (tensor<4xf32>) -> tensor<4xi64>
  func.return %1, %3 : tensor<4xf32>, tensor<4xi64>
}
// CHECK-LABEL: func.func @lossy(
// CHECK-NEXT:    %0 = graph.cast(%x)
// CHECK-NEXT:    %1 = graph.cast(%0)
// CHECK-NEXT:    %2 = graph.cast(%i)
// CHECK-NEXT:    %3 = graph.cast(%2)
