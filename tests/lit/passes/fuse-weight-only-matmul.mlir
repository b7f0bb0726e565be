// RUN: onnxc-opt %s -p fuse-weight-only-matmul --split-input-file | filecheck %s

// A uint4 weight in blocks of 16 along K (MatMulNBitsQuantizer's QDQ form) -> one
// graph.matmul_weight_quantized, the weight packed two values a byte, low nibble first.
func.func @uint4_blocked(%a: tensor<?x32xf32, #graph.dims<["m"]>>) -> tensor<?x2xf32, #graph.dims<["m"]>> {
  %q = graph.constant {value = dense<[[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 0], [1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 0], [1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 0], [1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 0]]> : tensor<32x2xui4>} : tensor<32x2xui4>
  %w = graph.dequantize_linear(%q) {scale = dense<[[0.5, -0.25], [1.0, 2.0]]> : tensor<2x2xf32>, zero_point = dense<[[8, 7], [0, 15]]> : tensor<2x2xi32>, axis = 0 : i64, block_size = 16 : i64} : (tensor<32x2xui4>) -> tensor<32x2xf32>
  %y = graph.matmul(%a, %w) : (tensor<?x32xf32, #graph.dims<["m"]>>, tensor<32x2xf32>) -> tensor<?x2xf32, #graph.dims<["m"]>>
  func.return %y : tensor<?x2xf32, #graph.dims<["m"]>>
}

// CHECK-LABEL: func.func @uint4_blocked(
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<{{\[\[\[}}49, 117, 185, 253, 49, 117, 185, 253], [49, 117, 185, 253, 49, 117, 185, 253]], {{\[\[}}66, 134, 202, 14, 66, 134, 202, 14], [66, 134, 202, 14, 66, 134, 202, 14]]]> : tensor<2x2x8xui8>} : tensor<2x2x8xui8>
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<{{\[\[}}5.000000e-01, 1.000000e+00], [-2.500000e-01, 2.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<{{\[\[}}8.000000e+00, 0.000000e+00], [7.000000e+00, 1.500000e+01]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT:    %y = graph.matmul_weight_quantized(%a, %{{.*}}, %{{.*}}, %{{.*}}) {bits = 4 : i64, block_size = 16 : i64} : (tensor<?x32xf32, #graph.dims<["m"]>>, tensor<2x2x8xui8>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32, #graph.dims<["m"]>>
// CHECK-NEXT:    func.return %y
// CHECK-NOT:     graph.dequantize_linear

// -----

// A signed int4 weight: values and zero points shifted by 8 to MatMulNBits' unsigned form.
func.func @int4_blocked(%a: tensor<3x16xf32>) -> tensor<3x1xf32> {
  %q = graph.constant {value = dense<[[-8], [-7], [-6], [-5], [-4], [-3], [-2], [-1], [0], [1], [2], [3], [4], [5], [6], [7]]> : tensor<16x1xi4>} : tensor<16x1xi4>
  %w = graph.dequantize_linear(%q) {scale = dense<[[0.5]]> : tensor<1x1xf32>, zero_point = dense<[[-1]]> : tensor<1x1xi32>, axis = 0 : i64, block_size = 16 : i64} : (tensor<16x1xi4>) -> tensor<16x1xf32>
  %y = graph.matmul(%a, %w) : (tensor<3x16xf32>, tensor<16x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}

// CHECK-LABEL: func.func @int4_blocked(
// CHECK:         %{{.*}} = graph.constant {value = dense<{{\[\[\[}}16, 50, 84, 118, 152, 186, 220, 254]]]> : tensor<1x1x8xui8>} : tensor<1x1x8xui8>
// CHECK:         %{{.*}} = graph.constant {value = dense<7.000000e+00> : tensor<1x1xf32>} : tensor<1x1xf32>
// CHECK:         %y = graph.matmul_weight_quantized(%a,

// -----

// Blocks of 8 are no MatMulNBits block size: left alone.
func.func @block_of_8(%a: tensor<3x16xf32>) -> tensor<3x1xf32> {
  %q = graph.constant {value = dense<1> : tensor<16x1xui4>} : tensor<16x1xui4>
  %w = graph.dequantize_linear(%q) {scale = dense<[[0.5], [0.25]]> : tensor<2x1xf32>, zero_point = dense<[[8], [8]]> : tensor<2x1xi32>, axis = 0 : i64, block_size = 8 : i64} : (tensor<16x1xui4>) -> tensor<16x1xf32>
  %y = graph.matmul(%a, %w) : (tensor<3x16xf32>, tensor<16x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}

// CHECK-LABEL: func.func @block_of_8(
// CHECK:         graph.dequantize_linear
// CHECK:         graph.matmul(

// -----

// A weight computed at run time: left alone.
func.func @run_time_weight(%a: tensor<3x16xf32>, %q: tensor<16x1xui4>) -> tensor<3x1xf32> {
  %w = graph.dequantize_linear(%q) {scale = dense<[[0.5]]> : tensor<1x1xf32>, zero_point = dense<[[8]]> : tensor<1x1xi32>, axis = 0 : i64, block_size = 16 : i64} : (tensor<16x1xui4>) -> tensor<16x1xf32>
  %y = graph.matmul(%a, %w) : (tensor<3x16xf32>, tensor<16x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}

// CHECK-LABEL: func.func @run_time_weight(
// CHECK:         graph.dequantize_linear
// CHECK:         graph.matmul(
