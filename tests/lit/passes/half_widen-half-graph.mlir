// RUN: onnxc-opt %s -p widen-half-graph --split-input-file | filecheck %s

// Every bf16 op, data movement included, computes in f32 and nothing is rounded between
// them: casts remain at the graph's edges only; weights become f32 constants.
func.func @graph(%x: tensor<1x2x4x4xbf16>) -> tensor<1x32xbf16> {
  %w = graph.constant {value = dense<0.5> : tensor<2x2x1x1xbf16>} : tensor<2x2x1x1xbf16>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xbf16>, tensor<2x2x1x1xbf16>) -> tensor<1x2x4x4xbf16>
  %r = graph.relu(%c) : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xbf16>
  %f = graph.reshape(%r) : (tensor<1x2x4x4xbf16>) -> tensor<1x32xbf16>
  func.return %f : tensor<1x32xbf16>
}
// CHECK-LABEL: func.func @graph(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %1 = graph.constant {value = dense<5.000000e-01> : tensor<2x2x1x1xf32>}
// CHECK-NEXT:    %c = graph.conv(%0, %1) {{.*}} -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %r = graph.relu(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %f = graph.reshape(%r) : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
// CHECK-NEXT:    %f_1 = graph.cast(%f) {onnxc.widened} : (tensor<1x32xf32>) -> tensor<1x32xbf16>
// CHECK-NEXT:    func.return %f_1

// -----

// fp16 too: the softmax and the add compute in f32, rounded to f16 once at the output.
func.func @f16_graph(%x: tensor<4xf16>) -> tensor<4xf16> {
  %s = graph.softmax(%x) {axis = 0 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  %a = graph.add(%s, %x) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %a : tensor<4xf16>
}
// CHECK-LABEL: func.func @f16_graph(
// CHECK-NEXT:    %0 = graph.cast(%x) {onnxc.widened} : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:    %s = graph.softmax(%0) {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %a = graph.add(%s, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %a_1 = graph.cast(%a) {onnxc.widened} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    func.return %a_1

// -----

// Negative: the model's own casts stay (their rounding is the model's).
func.func @own_casts(%y: tensor<4xf32>) -> tensor<4xf32> {
  %b = graph.cast(%y) : (tensor<4xf32>) -> tensor<4xbf16>
  %z = graph.cast(%b) : (tensor<4xbf16>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
// CHECK-LABEL: func.func @own_casts(
// CHECK-NEXT:    %b = graph.cast(%y) : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:    %z = graph.cast(%b) : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %z
