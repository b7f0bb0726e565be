// RUN: onnxc-opt %s -p cancel-layout-conversions --split-input-file | filecheck %s

// An inverse pair NCHW -> NHWC -> NCHW disappears; the NHWC value stays for its other user.
func.func @round_trip(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32, #layout.spec<"NHWC">>) {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = graph.relu(%0) : (tensor<1x2x3x4xf32, #layout.spec<"NHWC">>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %2 = layout.convert %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x3x4xf32>
  %3 = graph.add(%2, %x) : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %3, %1 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @round_trip(
// CHECK-NEXT:    %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %1 = graph.relu(%0)
// CHECK-NEXT:    %2 = graph.add(%x, %x)
// CHECK-NEXT:    func.return %2, %1

// -----

// A chain A -> B -> C becomes A -> C.
func.func @chain(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #layout.spec<"NCHW8c">> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = layout.convert %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x3x4xf32, #layout.spec<"NCHW8c">>
  func.return %1 : tensor<1x2x3x4xf32, #layout.spec<"NCHW8c">>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NCHW8c">>
// CHECK-NEXT:    func.return %0

// -----

// A conversion to the layout a value already has is no conversion.
func.func @identity(%x: tensor<1x2x3x4xf32, #layout.spec<"NHWC">>) -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">> {
  %0 = layout.convert %x : tensor<1x2x3x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  func.return %0 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @identity(
// CHECK-NEXT:    func.return %x

// -----

// Negative: the cancelling rows only; a conversion of a constant is fold-layout-converts'
// (at every lowering), not this -O3 row's.
func.func @constant() -> tensor<1x2x1x1xf32, #layout.spec<"NHWC">> {
  %c = graph.constant {value = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %0 = layout.convert %c : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf32, #layout.spec<"NHWC">>
  func.return %0 : tensor<1x2x1x1xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @constant(
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %0 = layout.convert %c
// CHECK-NEXT:    func.return %0
