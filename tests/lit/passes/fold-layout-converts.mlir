// RUN: onnxc-opt %s -p fold-layout-converts --split-input-file | filecheck %s

// An inverse pair NCHW -> NHWC -> NCHW disappears.
func.func @inverse_pair(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = layout.convert %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x3x4xf32>
  %2 = graph.relu(%1) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %2 : tensor<1x2x3x4xf32>
}
// CHECK-LABEL: func.func @inverse_pair(
// CHECK-NEXT:    %0 = graph.relu(%x)
// CHECK-NEXT:    func.return %0

// -----

// A chain A -> B -> C becomes A -> C.
func.func @chain(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #layout.spec<"NCHW16c">> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = layout.convert %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x3x4xf32, #layout.spec<"NCHW16c">>
  func.return %1 : tensor<1x2x3x4xf32, #layout.spec<"NCHW16c">>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NCHW16c">>
// CHECK-NEXT:    func.return %0

// -----

// A constant is re-laid at compile time: NHWC data is stored in memory order, so the
// logical [[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]] (C = 2, W = 2) is stored 1, 5, 2, 6, ...
func.func @constant(%x: tensor<1x2x2x2xf32, #layout.spec<"NHWC">>) -> tensor<1x2x2x2xf32, #layout.spec<"NHWC">> {
  %c = graph.constant {value = dense<[[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]]> : tensor<1x2x2x2xf32>} : tensor<1x2x2x2xf32>
  %0 = layout.convert %c : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32, #layout.spec<"NHWC">>
  %1 = graph.add(%x, %0) : (tensor<1x2x2x2xf32, #layout.spec<"NHWC">>, tensor<1x2x2x2xf32, #layout.spec<"NHWC">>) -> tensor<1x2x2x2xf32, #layout.spec<"NHWC">>
  func.return %1 : tensor<1x2x2x2xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @constant(
// CHECK-NEXT:    %0 = graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00, 5.000000e+00], [2.000000e+00, 6.000000e+00]], {{\[\[}}3.000000e+00, 7.000000e+00], [4.000000e+00, 8.000000e+00]]]]> : tensor<1x2x2x2xf32, #layout.spec<"NHWC">>}
// CHECK-NEXT:    %1 = graph.add(%x, %0)
// CHECK-NEXT:    func.return %1

// -----

// A conversion that moves no bytes ([N, C, 1, 1]) becomes a view.
func.func @free(%x: tensor<2x8x1x1xf32, #layout.spec<"NHWC">>) -> tensor<2x8x1x1xf32> {
  %0 = layout.convert %x : tensor<2x8x1x1xf32, #layout.spec<"NHWC">> -> tensor<2x8x1x1xf32>
  func.return %0 : tensor<2x8x1x1xf32>
}
// CHECK-LABEL: func.func @free(
// CHECK-NEXT:    %0 = graph.reshape(%x) : (tensor<2x8x1x1xf32, #layout.spec<"NHWC">>) -> tensor<2x8x1x1xf32>
// CHECK-NEXT:    func.return %0

// -----

// Two conversions of one value to one layout become one.
func.func @siblings(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = graph.relu(%0) : (tensor<1x2x3x4xf32, #layout.spec<"NHWC">>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %2 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %3 = graph.add(%1, %2) : (tensor<1x2x3x4xf32, #layout.spec<"NHWC">>, tensor<1x2x3x4xf32, #layout.spec<"NHWC">>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  func.return %3 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @siblings(
// CHECK-NEXT:    %0 = layout.convert %x
// CHECK-NEXT:    %1 = graph.relu(%0)
// CHECK-NEXT:    %2 = graph.add(%1, %0)
// CHECK-NEXT:    func.return %2

// -----

// Negative: a real transposition (H, W > 1) of a non-constant stays.
func.func @real(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  func.return %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @real(
// CHECK-NEXT:    %0 = layout.convert %x
// CHECK-NEXT:    func.return %0

// -----

// ConvNeXt's permutes: a channels-last transpose of an NHWC value's plain conversion, and
// the NHWC conversion of a channels-first transpose of a plain [N, H, W, C], read the same
// bytes as the transpose's other side: each pair becomes one transpose that moves nothing
// (lowered as a view of its operand's buffer).
func.func @transpose_views(%x: tensor<1x8x4x4xf32, #layout.spec<"NHWC">>, %y: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x8x4x4xf32, #layout.spec<"NHWC">>) {
  %0 = layout.convert %x : tensor<1x8x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x8x4x4xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %2 = graph.transpose(%y) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %3 = layout.convert %2 : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
  func.return %1, %3 : tensor<1x4x4x8xf32>, tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @transpose_views(
// CHECK-NEXT:    %0 = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32, #layout.spec<"NHWC">>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %1 = graph.transpose(%y) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    func.return %0, %1

// -----

// Negative: a transpose that the layouts do not undo (H and W swapped) keeps its
// conversion.
func.func @transpose_moves(%x: tensor<1x8x4x4xf32, #layout.spec<"NHWC">>) -> tensor<1x8x4x4xf32> {
  %0 = layout.convert %x : tensor<1x8x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x8x4x4xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %1 : tensor<1x8x4x4xf32>
}
// CHECK-LABEL: func.func @transpose_moves(
// CHECK-NEXT:    %0 = layout.convert %x
// CHECK-NEXT:    %1 = graph.transpose(%0)
// CHECK-NEXT:    func.return %1
