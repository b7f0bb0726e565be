// RUN: onnxc-opt %s -p fuse-activation --split-input-file | filecheck %s

// Relu6 (Clip 0..6) after a conv, Relu after a MatMul and Sigmoid after a Gemm become
// the producers' epilogues.
func.func @epilogues(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %r6 = graph.clip(%c) {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu(%m) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = graph.gemm(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %s = graph.sigmoid(%g) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %r6, %r, %s : tensor<1x3x4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @epilogues(
// CHECK-NEXT:    %r6 = graph.conv(%x, %w) {{{.*}}activation = "clip", activation_alpha = 0.000000e+00 : f32, activation_beta = 6.000000e+00 : f32}
// CHECK-NEXT:    %r = graph.matmul(%a, %b) {activation = "relu"}
// CHECK-NEXT:    %s = graph.gemm(%a, %b) {{{.*}}activation = "sigmoid"}
// CHECK-NEXT:    func.return %r6, %r, %s

// -----

// The importer's HardSwish, x * clip(x * (1/6) + 0.5, 0, 1), after a conv.
func.func @hard_swish(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %a = graph.constant {value = dense<0.166666672> : tensor<f32>} : tensor<f32>
  %b = graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %t = graph.mul(%c, %a) : (tensor<1x3x4x4xf32>, tensor<f32>) -> tensor<1x3x4x4xf32>
  %u = graph.add(%t, %b) : (tensor<1x3x4x4xf32>, tensor<f32>) -> tensor<1x3x4x4xf32>
  %h = graph.clip(%u) {min = 0.0 : f32, max = 1.0 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %y = graph.mul(%c, %h) : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @hard_swish(
// CHECK-NEXT:    %y = graph.conv(%x, %w) {{{.*}}activation = "hard_swish", activation_alpha = 0.166666672 : f32, activation_beta = 5.000000e-01 : f32}
// CHECK-NEXT:    func.return %y

// -----

// torch's SiLU as exported, x * Sigmoid(x), after a conv (either operand order); not when
// the sigmoid has another reader.
func.func @silu(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %s = graph.sigmoid(%c) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %y = graph.mul(%s, %c) : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %d = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %t = graph.sigmoid(%d) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %z = graph.mul(%d, %t) : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %y, %z, %t : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @silu(
// CHECK-NEXT:    %y = graph.conv(%x, %w) {{{.*}}activation = "silu"}
// CHECK-NEXT:    %d = graph.conv(%x, %w)
// CHECK-NEXT:    %t = graph.sigmoid(%d)
// CHECK-NEXT:    %z = graph.mul(%d, %t)
// CHECK-NEXT:    func.return %y, %z, %t

// -----

// The pre-activation value is also returned, and a producer keeps at most one epilogue.
func.func @no_epilogue(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu(%m) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %n = graph.matmul(%a, %b) {activation = "relu"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %t = graph.tanh(%n) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %r, %m, %t : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @no_epilogue(
// CHECK-NEXT:    %m = graph.matmul(%a, %b) :
// CHECK-NEXT:    %r = graph.relu(%m)
// CHECK-NEXT:    %n = graph.matmul(%a, %b) {activation = "relu"}
// CHECK-NEXT:    %t = graph.tanh(%n)

// -----

// GELU after a Linear's Gemm seen through its row view (fuse-matmul-add's [M, N] ->
// [1, seq, N]) becomes the Gemm's epilogue, the view after it.
func.func @through_view(%a: tensor<5x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<1x5x4xf32> {
  %g = graph.gemm(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<5x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
  %v = graph.reshape(%g) : (tensor<5x4xf32>) -> tensor<1x5x4xf32>
  %y = graph.gelu(%v) {approximate = "none"} : (tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  func.return %y : tensor<1x5x4xf32>
}
// CHECK-LABEL: func.func @through_view(
// CHECK-NEXT:    %[[G:.*]] = graph.gemm(%a, %b, %c) {{{.*}}activation = "gelu"} : (tensor<5x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape(%[[G]]) : (tensor<5x4xf32>) -> tensor<1x5x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
