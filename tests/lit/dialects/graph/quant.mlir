// RUN: ONNXC_ROUNDTRIP

// Per-tensor, per-axis and blocked parameters, integer and float quantized types.
func.func @quant_forms(%x: tensor<2x6xf32>, %q: tensor<2x6xi4>, %f: tensor<2x6xf8E4M3FN>) -> (tensor<2x6xui8>, tensor<2x6xi8>, tensor<2x6xf32>, tensor<2x6xf16>, tensor<2x6xf8E4M3FN>) {
  %0 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<2x6xf32>) -> tensor<2x6xui8>
  %1 = graph.quantize_linear(%x) {scale = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01, 5.000000e-01, 6.000000e-01]> : tensor<6xf32>, zero_point = dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi32>, axis = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xi8>
  %2 = graph.dequantize_linear(%q) {scale = dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>, zero_point = dense<[[-8, 7], [0, -1]]> : tensor<2x2xi32>, axis = 1 : i64, block_size = 4 : i64} : (tensor<2x6xi4>) -> tensor<2x6xf32>
  %3 = graph.dequantize_linear(%f) {scale = 2.500000e-01 : f16, zero_point = 0.000000e+00 : f32} : (tensor<2x6xf8E4M3FN>) -> tensor<2x6xf16>
  %4 = graph.quantize_linear(%x) {scale = 2.000000e+00 : f32, zero_point = 0.000000e+00 : f32, saturate = 0 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf8E4M3FN>
  func.return %0, %1, %2, %3, %4 : tensor<2x6xui8>, tensor<2x6xi8>, tensor<2x6xf32>, tensor<2x6xf16>, tensor<2x6xf8E4M3FN>
}
// CHECK-LABEL: func.func @quant_forms(
// CHECK-NEXT:    %0 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64}
// CHECK-NEXT:    %1 = graph.quantize_linear(%x) {scale = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01, 5.000000e-01, 6.000000e-01]> : tensor<6xf32>, zero_point = dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi32>, axis = 1 : i64}
// CHECK-NEXT:    %2 = graph.dequantize_linear(%q) {scale = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>, zero_point = dense<{{\[}}[-8, 7], [0, -1]]> : tensor<2x2xi32>, axis = 1 : i64, block_size = 4 : i64}
// CHECK-NEXT:    %3 = graph.dequantize_linear(%f) {scale = 2.500000e-01 : f16, zero_point = 0.000000e+00 : f32}
// CHECK-NEXT:    %4 = graph.quantize_linear(%x) {scale = 2.000000e+00 : f32, zero_point = 0.000000e+00 : f32, saturate = 0 : i64}
