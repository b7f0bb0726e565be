// RUN: onnxc-opt %s -p "widen-half-precision{f32-between-ops=true}" --split-input-file | filecheck %s

// Between two widened ops the value stays f32 (as onnxruntime drops its own inserted casts);
// the half result the model returns is still rounded, once.
func.func @chain(%x: tensor<1x2x4x4xf16>) -> (tensor<1x2x4x4xf16>, tensor<1x2x2x2xf16>) {
  %p = graph.max_pool(%x) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %s = graph.softmax(%p) {axis = 1 : i64} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %a = graph.average_pool(%s) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
  func.return %s, %a : tensor<1x2x4x4xf16>, tensor<1x2x2x2xf16>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %p = graph.max_pool(%0) {{.*}} -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %s = graph.softmax(%p) {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %s_1 = graph.cast(%s) {onnxc.widened} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
// CHECK-NEXT:    %a = graph.average_pool(%s) {{.*}} -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %a_1 = graph.cast(%a) {onnxc.widened} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf16>
// CHECK-NEXT:    func.return %s_1, %a_1

// -----

// Negative: a round trip the model wrote itself is a rounding it asked for.
func.func @model_casts(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xf16>
  %y = graph.cast(%h) : (tensor<4xf16>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @model_casts(
// CHECK-NEXT:    %h = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    %y = graph.cast(%h) : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %y
