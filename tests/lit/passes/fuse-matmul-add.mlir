// RUN: onnxc-opt %s -p fuse-matmul-add --split-input-file | filecheck %s

// MatMul + bias becomes one Gemm with C = bias, beta = 1.
func.func @matmul_add(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = graph.add(%c, %m) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_add(
// CHECK-NEXT:    %y = graph.gemm(%a, %b, %c) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// A Gemm without bias takes the addend as C.
func.func @gemm_add(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %m = graph.gemm(%a, %b) {alpha = 2.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = graph.add(%m, %c) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @gemm_add(
// CHECK-NEXT:    %y = graph.gemm(%a, %b, %c) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}

// -----

// An addend that is not a bias over the last axis (a whole [5, 2, 4] tensor) stays an Add,
// as does one that enlarges the result.
func.func @no_gemm(%a: tensor<5x2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<5x2x4xf32>, %d: tensor<1x3xf32>, %e: tensor<2x1x4xf32>) -> (tensor<5x2x4xf32>, tensor<2x1x4xf32>) {
  %m = graph.matmul(%a, %b) : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  %y = graph.add(%m, %c) : (tensor<5x2x4xf32>, tensor<5x2x4xf32>) -> tensor<5x2x4xf32>
  %n = graph.matmul(%d, %b) : (tensor<1x3xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  %z = graph.add(%n, %e) : (tensor<1x4xf32>, tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  func.return %y, %z : tensor<5x2x4xf32>, tensor<2x1x4xf32>
}
// CHECK-LABEL: func.func @no_gemm(
// CHECK-NOT:     graph.gemm
// CHECK:         graph.add
// CHECK:         graph.add

// -----

// A Linear on [..., K] rows by constant weights (a transformer's [1, seq, K], ConvNeXt's
// [1, H, W, K]): the Gemm of the rows as [M, K] and [M, N] views (graph.reshape), the
// bias as its C; a [1, 1, N] bias is seen as [1, N]; a symbolic seq makes M symbolic.
func.func @rows(%a: tensor<1x5x3xf32>, %c: tensor<4xf32>, %x: tensor<1x2x2x3xf32>, %d: tensor<1x1x1x4xf32>, %s: tensor<1x?x3xf32, #graph.dims<["seq"]>>) -> (tensor<1x5x4xf32>, tensor<1x2x2x4xf32>, tensor<1x?x4xf32, #graph.dims<["seq"]>>) {
  %b = graph.constant {value = dense<0.5> : tensor<3x4xf32>} : tensor<3x4xf32>
  %m = graph.matmul(%a, %b) : (tensor<1x5x3xf32>, tensor<3x4xf32>) -> tensor<1x5x4xf32>
  %y = graph.add(%m, %c) : (tensor<1x5x4xf32>, tensor<4xf32>) -> tensor<1x5x4xf32>
  %n = graph.matmul(%x, %b) : (tensor<1x2x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x2x4xf32>
  %z = graph.add(%d, %n) : (tensor<1x1x1x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %p = graph.matmul(%s, %b) : (tensor<1x?x3xf32, #graph.dims<["seq"]>>, tensor<3x4xf32>) -> tensor<1x?x4xf32, #graph.dims<["seq"]>>
  %q = graph.add(%p, %c) : (tensor<1x?x4xf32, #graph.dims<["seq"]>>, tensor<4xf32>) -> tensor<1x?x4xf32, #graph.dims<["seq"]>>
  func.return %y, %z, %q : tensor<1x5x4xf32>, tensor<1x2x2x4xf32>, tensor<1x?x4xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @rows(
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %[[A:.*]] = graph.reshape(%a) : (tensor<1x5x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm(%[[A]], %b, %c) {{.*}} : (tensor<5x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape(%[[G]]) : (tensor<5x4xf32>) -> tensor<1x5x4xf32>
// CHECK-NEXT:    %[[X:.*]] = graph.reshape(%x) : (tensor<1x2x2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.reshape(%d) : (tensor<1x1x1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.gemm(%[[X]], %b, %[[D]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.reshape(%[[H]]) : (tensor<4x4xf32>) -> tensor<1x2x2x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.reshape(%s) : (tensor<1x?x3xf32, #graph.dims<["seq"]>>) -> tensor<?x3xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %[[P:.*]] = graph.gemm(%[[S]], %b, %c) {{.*}} -> tensor<?x4xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %[[Q:.*]] = graph.reshape(%[[P]]) : (tensor<?x4xf32, #graph.dims<["seq"]>>) -> tensor<1x?x4xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %[[Y]], %[[Z]], %[[Q]]

// -----

// Negative: weights computed at run time (the packed GEMM's epilogue needs a constant B;
// a small product of run-time weights sums its bias first), and a product with another
// reader, keep their Adds.
func.func @rows_kept(%a: tensor<1x5x3xf32>, %w: tensor<3x4xf32>, %c: tensor<4xf32>) -> (tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>) {
  %b = graph.constant {value = dense<0.5> : tensor<3x4xf32>} : tensor<3x4xf32>
  %m = graph.matmul(%a, %w) : (tensor<1x5x3xf32>, tensor<3x4xf32>) -> tensor<1x5x4xf32>
  %y = graph.add(%m, %c) : (tensor<1x5x4xf32>, tensor<4xf32>) -> tensor<1x5x4xf32>
  %n = graph.matmul(%a, %b) : (tensor<1x5x3xf32>, tensor<3x4xf32>) -> tensor<1x5x4xf32>
  %z = graph.add(%n, %c) : (tensor<1x5x4xf32>, tensor<4xf32>) -> tensor<1x5x4xf32>
  func.return %y, %z, %n : tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>
}
// CHECK-LABEL: func.func @rows_kept(
// CHECK-NOT:     graph.gemm
// CHECK:         func.return
