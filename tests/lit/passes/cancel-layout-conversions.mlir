// RUN: onnxc-opt %s -p cancel-layout-conversions --split-input-file | filecheck %s

func.func @round_trip(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = graph.layout_convert(%x) {from_layout = "NCHW", to_layout = "NHWC"} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.relu(%0) : (tensor<1x3x4x2xf32>) -> tensor<1x3x4x2xf32>
  %2 = graph.layout_convert(%0) {from_layout = "NHWC", to_layout = "NCHW"} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  %3 = graph.add(%2, %x) : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %3 : tensor<1x2x3x4xf32>
}
// CHECK-LABEL: func.func @round_trip(
// CHECK-NEXT:    %0 = graph.add(%x, %x)
// CHECK-NEXT:    func.return %0

// -----

func.func @chain(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32> {
  %0 = graph.layout_convert(%x) {from_layout = "NCHW", to_layout = "NHWC"} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.layout_convert(%0) {from_layout = "NHWC", to_layout = "NCWH"} : (tensor<1x3x4x2xf32>) -> tensor<1x2x4x3xf32>
  func.return %1 : tensor<1x2x4x3xf32>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = graph.layout_convert(%x) {from_layout = "NCHW", to_layout = "NCWH"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
// CHECK-NEXT:    func.return %0

// -----

// Negative: the second conversion does not start from the first one's layout.
func.func @mismatch(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = graph.layout_convert(%x) {from_layout = "NCHW", to_layout = "NHWC"} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.layout_convert(%0) {from_layout = "NCHW", to_layout = "NWCH"} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %1 : tensor<1x2x3x4xf32>
}
// CHECK-LABEL: func.func @mismatch(
// CHECK-NEXT:    %0 = graph.layout_convert(%x)
// CHECK-NEXT:    %1 = graph.layout_convert(%0)
