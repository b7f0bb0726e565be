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
// CHECK-NEXT:    %0 = graph.fused_elementwise(%a, %b) : (tensor<1x4x2x2xui8>, tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xui8> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: ui8, %[[B:.*]]: ui8):
// dequantize a: (a - 128) * 0.5
// CHECK-NEXT:      %[[AF:.*]] = arith.uitofp %[[A]] : ui8 to f32
// CHECK-NEXT:      %[[ZA:.*]] = arith.constant 1.280000e+02 : f32
// CHECK-NEXT:      %[[AS:.*]] = arith.subf %[[AF]], %[[ZA]] : f32
// CHECK-NEXT:      %[[SA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[DA:.*]] = arith.mulf %[[AS]], %[[SA]] : f32
// dequantize b: (b - 3) * 0.25
// CHECK-NEXT:      %[[BF:.*]] = arith.uitofp %[[B]] : ui8 to f32
// CHECK-NEXT:      %[[ZB:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %[[BS:.*]] = arith.subf %[[BF]], %[[ZB]] : f32
// CHECK-NEXT:      %[[SB:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %[[DB:.*]] = arith.mulf %[[BS]], %[[SB]] : f32
// add, relu
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[DA]], %[[DB]] : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[RELU:.*]] = arith.maximumf %[[SUM]], %[[ZERO]] : f32
// quantize: clamp(round_half_even(x / 0.125) + 0, 0, 255) as ui8
// CHECK-NEXT:      %[[S:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[RELU]], %[[S]] : f32
// CHECK-NEXT:      %[[QR:.*]] = math.roundeven %[[Q]] : f32
// CHECK-NEXT:      %[[QZ:.*]] = arith.addf %[[QR]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[QLO:.*]] = arith.maximumf %[[QZ]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[HI:.*]] = arith.constant 2.550000e+02 : f32
// CHECK-NEXT:      %[[QHI:.*]] = arith.minimumf %[[QLO]], %[[HI]] : f32
// CHECK-NEXT:      %[[U8:.*]] = arith.fptoui %[[QHI]] : f32 to ui8
// CHECK-NEXT:      graph.yield %[[U8]] : ui8
// CHECK-NEXT:    }
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
// CHECK-NEXT:    %2 = graph.fused_elementwise(%a, %b) : (tensor<2x4xi8>, tensor<2x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: i8, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[AF:.*]] = arith.sitofp %[[A]] : i8 to f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[AS:.*]] = arith.subf %[[AF]], %[[Z]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[DQ:.*]] = arith.mulf %[[AS]], %[[S]] : f32
// CHECK-NEXT:      %[[ADD:.*]] = arith.addf %[[DQ]], %[[B]] : f32
// CHECK-NEXT:      %[[MUL:.*]] = arith.mulf %[[DQ]], %[[ADD]] : f32
// CHECK-NEXT:      graph.yield %[[MUL]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %1, %2
