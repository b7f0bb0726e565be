// RUN: onnxc-opt %s -p fuse-gelu --split-input-file | filecheck %s

// torch.nn.GELU() as torch.onnx exports it: ((x * (erf(x / 1.4142135) + 1)) * 0.5).
func.func @torch_erf_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%x, %sqrt2) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = graph.erf(%0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = graph.add(%1, %one) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %3 = graph.mul(%x, %2) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = graph.mul(%3, %half) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %4 : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @torch_erf_gelu(
// CHECK-NEXT:    %{{.*}} = graph.gelu(%x) {approximate = "none"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return

// -----

// HF BERT's gelu: x * 0.5 * (1.0 + erf(x * 0.70710678)).
func.func @hf_erf_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %rsqrt2 = graph.constant {value = dense<0.707106769> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %h = graph.mul(%x, %half) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %0 = graph.mul(%rsqrt2, %x) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = graph.erf(%0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = graph.add(%one, %1) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = graph.mul(%h, %2) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %3 : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @hf_erf_gelu(
// CHECK-NEXT:    %{{.*}} = graph.gelu(%x) {approximate = "none"}
// CHECK-NEXT:    func.return

// -----

// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x^3 as Pow.
func.func @tanh_gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %three = graph.constant {value = dense<3.000000e+00> : tensor<f32>} : tensor<f32>
  %c = graph.constant {value = dense<4.471500e-02> : tensor<f32>} : tensor<f32>
  %k = graph.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %0 = graph.pow(%x, %three) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.mul(%c, %0) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%x, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.mul(%2, %k) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %4 = graph.tanh(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.add(%4, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %6 = graph.mul(%half, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %7 = graph.mul(%6, %5) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %7 : tensor<4xf32>
}
// CHECK-LABEL: func.func @tanh_gelu(
// CHECK-NEXT:    %{{.*}} = graph.gelu(%x) {approximate = "tanh"}
// CHECK-NEXT:    func.return

// -----

// Negative: the erf reads y, not the x being multiplied.
func.func @other_operand(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%y, %sqrt2) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.erf(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%1, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = graph.mul(%x, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul(%3, %half) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}
// CHECK-LABEL: func.func @other_operand(
// CHECK-NOT:     graph.gelu
// CHECK:         graph.erf

// -----

// Negative: a factor of 0.6 instead of 0.5 is not GELU.
func.func @wrong_half(%x: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<6.000000e-01> : tensor<f32>} : tensor<f32>
  %0 = graph.div(%x, %sqrt2) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.erf(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%1, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = graph.mul(%x, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul(%3, %half) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}
// CHECK-LABEL: func.func @wrong_half(
// CHECK-NOT:     graph.gelu
// CHECK:         graph.erf

// -----

// GPT-2's NewGELU on its Conv1D output, as drop-reshape-before-binary leaves it: x is the
// Gemm's [seq, n] rows reshaped to [1, seq, n], and the Add inside tanh reads the rows.
func.func @tanh_gelu_through_unit_reshape(%g: tensor<3x4xf32>) -> tensor<1x3x4xf32> {
  %three = graph.constant {value = dense<3.000000e+00> : tensor<f32>} : tensor<f32>
  %c = graph.constant {value = dense<4.471500e-02> : tensor<f32>} : tensor<f32>
  %k = graph.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %x = graph.reshape(%g) : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
  %h = graph.mul(%x, %half) : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %0 = graph.pow(%x, %three) : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %1 = graph.mul(%0, %c) : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %2 = graph.add(%g, %1) : (tensor<3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %3 = graph.mul(%2, %k) : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %4 = graph.tanh(%3) : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %5 = graph.add(%4, %one) : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %6 = graph.mul(%h, %5) : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  func.return %6 : tensor<1x3x4xf32>
}
// CHECK-LABEL: func.func @tanh_gelu_through_unit_reshape(
// CHECK:         %[[X:.*]] = graph.reshape(%g)
// CHECK-NEXT:    %{{.*}} = graph.gelu(%[[X]]) {approximate = "tanh"} : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:    func.return

