// RUN: onnxc-opt %s -p cancel-quant-dequant --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p 'cancel-quant-dequant{allow-rounding-change=true}' --split-input-file | filecheck %s --check-prefix=ROUND

// Dequantize then Quantize with the same scale and zero point is exact: always removed.
func.func @dequant_quant(%q: tensor<8xui8>) -> tensor<8xui8> {
  %0 = graph.dequantize_linear(%q) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<8xui8>) -> tensor<8xf32>
  %1 = graph.quantize_linear(%0) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<8xf32>) -> tensor<8xui8>
  func.return %1 : tensor<8xui8>
}
// CHECK-LABEL: func.func @dequant_quant(
// CHECK-NEXT:    func.return %q
// ROUND-LABEL: func.func @dequant_quant(
// ROUND-NEXT:    func.return %q

// -----

// A negative scale rounds as its absolute value: Dequantize then Quantize is still exact.
func.func @dequant_quant_negative_scale(%q: tensor<8xi8>) -> tensor<8xi8> {
  %0 = graph.dequantize_linear(%q) {scale = -5.000000e-02 : f32, zero_point = 3 : i64} : (tensor<8xi8>) -> tensor<8xf32>
  %1 = graph.quantize_linear(%0) {scale = -5.000000e-02 : f32, zero_point = 3 : i64} : (tensor<8xf32>) -> tensor<8xi8>
  func.return %1 : tensor<8xi8>
}
// CHECK-LABEL: func.func @dequant_quant_negative_scale(
// CHECK-NEXT:    func.return %q
// ROUND-LABEL: func.func @dequant_quant_negative_scale(
// ROUND-NEXT:    func.return %q

// -----

// Quantize then Dequantize drops the rounding: only with the opt-in allow-rounding-change.
func.func @quant_dequant(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = -3 : i64} : (tensor<8xf32>) -> tensor<8xi8>
  %1 = graph.dequantize_linear(%0) {scale = 5.000000e-02 : f32, zero_point = -3 : i64} : (tensor<8xi8>) -> tensor<8xf32>
  func.return %1 : tensor<8xf32>
}
// CHECK-LABEL: func.func @quant_dequant(
// CHECK-NEXT:    %0 = graph.quantize_linear(%x)
// CHECK-NEXT:    %1 = graph.dequantize_linear(%0)
// ROUND-LABEL: func.func @quant_dequant(
// ROUND-NEXT:    func.return %x

// -----

// Negative: different scales or zero points are a requantization, never removed.
func.func @requantize(%x: tensor<8xf32>, %q: tensor<8xui8>) -> (tensor<8xf32>, tensor<8xui8>) {
  %0 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 0 : i64} : (tensor<8xf32>) -> tensor<8xi8>
  %1 = graph.dequantize_linear(%0) {scale = 1.000000e-01 : f32, zero_point = 0 : i64} : (tensor<8xi8>) -> tensor<8xf32>
  %2 = graph.dequantize_linear(%q) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<8xui8>) -> tensor<8xf32>
  %3 = graph.quantize_linear(%2) {scale = 5.000000e-02 : f32, zero_point = 127 : i64} : (tensor<8xf32>) -> tensor<8xui8>
  func.return %1, %3 : tensor<8xf32>, tensor<8xui8>
}
// CHECK-LABEL: func.func @requantize(
// CHECK-NEXT:    %0 = graph.quantize_linear(%x)
// CHECK-NEXT:    %1 = graph.dequantize_linear(%0)
// CHECK-NEXT:    %2 = graph.dequantize_linear(%q)
// CHECK-NEXT:    %3 = graph.quantize_linear(%2)
// ROUND-LABEL: func.func @requantize(
// ROUND-NEXT:    %0 = graph.quantize_linear(%x)
// ROUND-NEXT:    %1 = graph.dequantize_linear(%0)
// ROUND-NEXT:    %2 = graph.dequantize_linear(%q)
// ROUND-NEXT:    %3 = graph.quantize_linear(%2)
