// RUN: ONNXC_ROUNDTRIP

// graph.attention's grouped-query heads (K/V with a divisor of Q's heads) and causal_offset
// (ONNX Attention's bottom-right causal mask): printing generically and reparsing gives the
// custom syntax back. Their verifier failures are in attention_invalid.mlir.

func.func @gqa_causal(%q: tensor<2x6x5x8xf32>, %k: tensor<2x2x9x8xf32>, %v: tensor<2x2x9x4xf32>, %m: tensor<5x9xf32>) -> tensor<2x6x5x4xf32> {
  %y = graph.attention(%q, %k, %v, %m) {scale = 5.000000e-01 : f32, causal_offset = 4 : i64} : (tensor<2x6x5x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x4xf32>, tensor<5x9xf32>) -> tensor<2x6x5x4xf32>
  func.return %y : tensor<2x6x5x4xf32>
}
// CHECK-LABEL: func.func @gqa_causal(
// CHECK-NEXT:    %y = graph.attention(%q, %k, %v, %m) {scale = 5.000000e-01 : f32, causal_offset = 4 : i64} : (tensor<2x6x5x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x4xf32>, tensor<5x9xf32>) -> tensor<2x6x5x4xf32>
// CHECK-NEXT:    func.return %y

// -----

func.func @causal_no_mask(%q: tensor<3x4x8xf64>, %k: tensor<3x4x8xf64>) -> tensor<3x4x8xf64> {
  %y = graph.attention(%q, %k, %k) {scale = 1.000000e+00 : f64, causal_offset = 0 : i64} : (tensor<3x4x8xf64>, tensor<3x4x8xf64>, tensor<3x4x8xf64>) -> tensor<3x4x8xf64>
  func.return %y : tensor<3x4x8xf64>
}
// CHECK-LABEL: func.func @causal_no_mask(
// CHECK-NEXT:    %y = graph.attention(%q, %k, %k) {scale = 1.000000e+00 : f64, causal_offset = 0 : i64} : (tensor<3x4x8xf64>, tensor<3x4x8xf64>, tensor<3x4x8xf64>) -> tensor<3x4x8xf64>

// -----

// output_perm: the product [1, 2, 4, 8] written transposed, as [1, 4, 2, 8].
func.func @output_perm(%q: tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32> {
  %y = graph.attention(%q, %q, %q) {scale = 1.000000e+00 : f32, output_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  func.return %y : tensor<1x4x2x8xf32>
}
// CHECK-LABEL: func.func @output_perm(
// CHECK-NEXT:    %y = graph.attention(%q, %q, %q) {scale = 1.000000e+00 : f32, output_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
// CHECK-NEXT:    func.return %y
