// RUN: onnxc-opt %s -p widen-half-precision --split-input-file | filecheck %s

// A conv on f16 computes in f32: the activation is cast on the way in and out (casts marked
// as the pass's own), the constant weight and bias become f32 constants (converted at
// compile time, no run-time cast).
func.func @conv(%x: tensor<1x2x4x4xf16>) -> tensor<1x3x4x4xf16> {
  %w = graph.constant {value = dense<0.5> : tensor<3x2x1x1xf16>} : tensor<3x2x1x1xf16>
  %b = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf16>} : tensor<3xf16>
  %y = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x2x4x4xf16>, tensor<3x2x1x1xf16>, tensor<3xf16>) -> tensor<1x3x4x4xf16>
  func.return %y : tensor<1x3x4x4xf16>
}
// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %1 = graph.constant {value = dense<5.000000e-01> : tensor<3x2x1x1xf32>}
// CHECK-NEXT:    %2 = graph.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>}
// CHECK-NEXT:    %y = graph.conv(%0, %1, %2) {{{.*}}activation = "relu"} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %y_1 = graph.cast(%y) {onnxc.widened} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf16>
// CHECK-NEXT:    func.return %y_1

// -----

// bf16: a reduction, a softmax and a matmul share one cast of %x; the transpose only moves
// bytes and stays bf16; an integer result (ArgMax) needs no cast back.
func.func @bf16(%x: tensor<2x4xbf16>) -> (tensor<2x1xbf16>, tensor<2x4xbf16>, tensor<2x2xbf16>, tensor<2x1xi64>) {
  %s = graph.reduce_sum(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4xbf16>) -> tensor<2x1xbf16>
  %p = graph.softmax(%x) {axis = 1 : i64} : (tensor<2x4xbf16>) -> tensor<2x4xbf16>
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<2x4xbf16>) -> tensor<4x2xbf16>
  %m = graph.matmul(%x, %t) : (tensor<2x4xbf16>, tensor<4x2xbf16>) -> tensor<2x2xbf16>
  %a = graph.arg_max(%x) {axis = 1 : i64, keepdims = 1 : i64, select_last_index = 0 : i64} : (tensor<2x4xbf16>) -> tensor<2x1xi64>
  func.return %s, %p, %m, %a : tensor<2x1xbf16>, tensor<2x4xbf16>, tensor<2x2xbf16>, tensor<2x1xi64>
}
// CHECK-LABEL: func.func @bf16(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK-NEXT:    %s = graph.reduce_sum(%0) {{.*}} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %s_1 = graph.cast(%s) {onnxc.widened} : (tensor<2x1xf32>) -> tensor<2x1xbf16>
// CHECK-NEXT:    %p = graph.softmax(%0) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %p_1 = graph.cast(%p) {onnxc.widened} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT:    %t = graph.transpose(%x) {{.*}} : (tensor<2x4xbf16>) -> tensor<4x2xbf16>
// CHECK-NEXT:    %1 = graph.cast(%t) {onnxc.widened} : (tensor<4x2xbf16>) -> tensor<4x2xf32>
// CHECK-NEXT:    %m = graph.matmul(%0, %1) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %m_1 = graph.cast(%m) {onnxc.widened} : (tensor<2x2xf32>) -> tensor<2x2xbf16>
// CHECK-NEXT:    %a = graph.arg_max(%0) {{.*}} : (tensor<2x4xf32>) -> tensor<2x1xi64>
// CHECK-NEXT:    func.return %s_1, %p_1, %m_1, %a

// -----

// A half Clip's bounds become f32 properties of the same value.
func.func @clip_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %y = graph.clip(%x) {min = 0.0 : bf16, max = 6.0 : bf16} : (tensor<4xbf16>) -> tensor<4xbf16>
  func.return %y : tensor<4xbf16>
}
// CHECK-LABEL: func.func @clip_bf16(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT:    %y = graph.clip(%0) {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %y_1 = graph.cast(%y) {onnxc.widened} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:    func.return %y_1

// -----

// A splat's fill value is a property: converted with the op.
func.func @constant_of_shape() -> tensor<2x3xbf16> {
  %c = graph.constant_of_shape {value = dense<1.5> : tensor<1xbf16>} : tensor<2x3xbf16>
  func.return %c : tensor<2x3xbf16>
}
// CHECK-LABEL: func.func @constant_of_shape(
// CHECK-NEXT:    %c = graph.constant_of_shape {value = dense<1.500000e+00> : tensor<1xf32>} : tensor<2x3xf32>
// CHECK-NEXT:    %c_1 = graph.cast(%c) {onnxc.widened} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
// CHECK-NEXT:    func.return %c_1

// -----

// Negative: f16 elementwise kernels, casts and views take half as it is; bf16 views and
// copies too; f32 ops are untouched.
func.func @kept(%x: tensor<2x4xf16>, %y: tensor<2x4xf16>, %b: tensor<2x4xbf16>, %f: tensor<2x4xf32>) -> (tensor<2x4xf16>, tensor<8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = graph.add(%x, %y) : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
  %r = graph.relu(%a) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %c = graph.clip(%r) {min = 0.0 : f16, max = 6.0 : f16} : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %v = graph.reshape(%b) : (tensor<2x4xbf16>) -> tensor<8xbf16>
  %w = graph.cast(%b) : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %s = graph.softmax(%f) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %c, %v, %w, %s : tensor<2x4xf16>, tensor<8xbf16>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %a = graph.add(%x, %y) : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    %r = graph.relu(%a) : (tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    %c = graph.clip(%r) {min = 0.000000e+00 : f16, max = 6.000000e+00 : f16}
// CHECK-NEXT:    %v = graph.reshape(%b) : (tensor<2x4xbf16>) -> tensor<8xbf16>
// CHECK-NEXT:    %w = graph.cast(%b) : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK-NEXT:    %s = graph.softmax(%f) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %c, %v, %w, %s
