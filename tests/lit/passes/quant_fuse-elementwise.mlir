// RUN: onnxc-opt %s -p fuse-elementwise --split-input-file | filecheck %s

// QDQ residual: DQ(a) + DQ(b) -> Relu -> Q is one fused loop over the 8-bit tensors.
func.func @residual(%a: tensor<1x4x2x2xui8>, %b: tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xui8> {
  %0 = graph.dequantize_linear(%a) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xf32>
  %1 = graph.dequantize_linear(%b) {scale = 2.500000e-01 : f32, zero_point = 3 : i64} : (tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xf32>
  %2 = graph.sum(%0, %1) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %3 = graph.relu(%2) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %4 = graph.quantize_linear(%3) {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
  func.return %4 : tensor<1x4x2x2xui8>
}
// CHECK-LABEL: func.func @residual(
// CHECK-NEXT:    %0 = graph.fused_elementwise(%a, %b) {steps = ["dequantize %0 0.5 128.0", "dequantize %1 0.25 3.0", "add %2 %3", "relu %4", "quantize %5 0.125 0.0 0.0 255.0"]} : (tensor<1x4x2x2xui8>, tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xui8>
// CHECK-NEXT:    func.return %0

// -----

// Negative: a per-axis Dequantize is not a step; a per-tensor one read twice inside one
// tree is computed once per element in it.
func.func @kept(%a: tensor<2x4xi8>, %b: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = graph.dequantize_linear(%a) {scale = dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>, zero_point = dense<0> : tensor<2xi32>, axis = 0 : i64} : (tensor<2x4xi8>) -> tensor<2x4xf32>
  %1 = graph.add(%0, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = graph.dequantize_linear(%a) {scale = 5.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2x4xi8>) -> tensor<2x4xf32>
  %3 = graph.add(%2, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = graph.mul(%2, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %1, %4 : tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %0 = graph.dequantize_linear(%a) {{.*}}axis = 0 : i64}
// CHECK-NEXT:    %1 = graph.add(%0, %b)
// CHECK-NEXT:    %2 = graph.fused_elementwise(%a, %b) {steps = ["dequantize %0 0.5 0.0", "add %2 %1", "mul %2 %3"]} : (tensor<2x4xi8>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %1, %2
