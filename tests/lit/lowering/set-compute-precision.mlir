// RUN: onnxc-opt %s -p "set-compute-precision{precision=bf16 check-host=false}" --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p "set-compute-precision{precision=fp32}" --split-input-file | filecheck %s --check-prefix=FP32

// An NHWC conv and a MatMul by a constant B compute in bf16; the depthwise conv, the
// MatMul by a run-time B and the elementwise ops stay f32 (no mark).
func.func @marks(%x: tensor<1x8x6x6xf32, #layout.spec<"NHWC">>, %a: tensor<20x9xf32>, %b: tensor<9x4xf32>) -> (tensor<1x16x6x6xf32, #layout.spec<"NHWC">>, tensor<20x4xf32>, tensor<20x4xf32>) {
  %wd = graph.constant {value = dense<0.5> : tensor<8x1x3x3xf32>} : tensor<8x1x3x3xf32>
  %wp = graph.constant {value = dense<0.25> : tensor<16x8x1x1xf32>} : tensor<16x8x1x1xf32>
  %wm = graph.constant {value = dense<0.125> : tensor<9x4xf32>} : tensor<9x4xf32>
  %0 = graph.conv(%x, %wd) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x6x6xf32, #layout.spec<"NHWC">>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32, #layout.spec<"NHWC">>
  %1 = graph.conv(%0, %wp) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32, #layout.spec<"NHWC">>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32, #layout.spec<"NHWC">>
  %2 = graph.relu(%1) : (tensor<1x16x6x6xf32, #layout.spec<"NHWC">>) -> tensor<1x16x6x6xf32, #layout.spec<"NHWC">>
  %3 = graph.matmul(%a, %wm) : (tensor<20x9xf32>, tensor<9x4xf32>) -> tensor<20x4xf32>
  %4 = graph.matmul(%a, %b) : (tensor<20x9xf32>, tensor<9x4xf32>) -> tensor<20x4xf32>
  func.return %2, %3, %4 : tensor<1x16x6x6xf32, #layout.spec<"NHWC">>, tensor<20x4xf32>, tensor<20x4xf32>
}
// CHECK-LABEL: func.func @marks(
// CHECK:         %0 = graph.conv(%x, %wd) {strides =
// CHECK-NEXT:    %1 = graph.conv(%0, %wp) {onnxc.precision = "bf16", strides =
// CHECK-NEXT:    %2 = graph.relu(%1) :
// CHECK-NEXT:    %3 = graph.matmul(%a, %wm) {onnxc.precision = "bf16"} :
// CHECK-NEXT:    %4 = graph.matmul(%a, %b) :
// FP32-LABEL: func.func @marks(
// FP32-NOT:     onnxc.precision

// -----

// A conv in NCHW (no NHWC kernel runs it) and a grouped conv whose groups have an odd
// channel count (pairs would straddle groups) stay f32.
func.func @unmarked(%x: tensor<1x6x5x5xf32>, %y: tensor<1x6x5x5xf32, #layout.spec<"NHWC">>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32, #layout.spec<"NHWC">>) {
  %w = graph.constant {value = dense<0.5> : tensor<4x6x1x1xf32>} : tensor<4x6x1x1xf32>
  %wg = graph.constant {value = dense<0.5> : tensor<4x3x1x1xf32>} : tensor<4x3x1x1xf32>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x6x5x5xf32>, tensor<4x6x1x1xf32>) -> tensor<1x4x5x5xf32>
  %1 = graph.conv(%y, %wg) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x6x5x5xf32, #layout.spec<"NHWC">>, tensor<4x3x1x1xf32>) -> tensor<1x4x5x5xf32, #layout.spec<"NHWC">>
  func.return %0, %1 : tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT:     onnxc.precision
// CHECK:         func.return
