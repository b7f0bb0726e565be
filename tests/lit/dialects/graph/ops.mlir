// RUN: ONNXC_ROUNDTRIP

// Every op of the graph dialect in its custom syntax: printing, printing generically,
// reparsing and printing again must give the input back (and every op must verify).

func.func @constants() -> (tensor<2x2xf32>, tensor<2x3xi64>) {
  %c = graph.constant {value = dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %z = graph.constant_of_shape {value = dense<0> : tensor<1xi64>} : tensor<2x3xi64>
  func.return %c, %z : tensor<2x2xf32>, tensor<2x3xi64>
}
// CHECK-LABEL: func.func @constants(
// CHECK-NEXT:    %c = graph.constant {value = dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT:    %z = graph.constant_of_shape {value = dense<0> : tensor<1xi64>} : tensor<2x3xi64>
// CHECK-NEXT:    func.return %c, %z : tensor<2x2xf32>, tensor<2x3xi64>
// CHECK-NEXT:  }

// -----

func.func @symbolic_constant(%x: tensor<?x8xf32, #graph.dims<["seq"]>>) -> (tensor<3xi64>, tensor<i32>) {
  %s = graph.symbolic_constant {values = ["seq", "8", "2*seq+1"]} : tensor<3xi64>
  %n = graph.symbolic_constant {values = ["seq"]} : tensor<i32>
  func.return %s, %n : tensor<3xi64>, tensor<i32>
}
// CHECK-LABEL: func.func @symbolic_constant(
// CHECK-NEXT:    %s = graph.symbolic_constant {values = ["seq", "8", "2*seq+1"]} : tensor<3xi64>
// CHECK-NEXT:    %n = graph.symbolic_constant {values = ["seq"]} : tensor<i32>
// CHECK-NEXT:    func.return %s, %n : tensor<3xi64>, tensor<i32>
// CHECK-NEXT:  }

// -----

func.func @unary(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.sigmoid(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.tanh(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.exp(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.log(%3) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.sqrt(%4) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = graph.neg(%5) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = graph.abs(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = graph.reciprocal(%7) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = graph.identity(%8) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = graph.dropout(%9) {ratio = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %11 = graph.dropout(%10) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = graph.leaky_relu(%11) {alpha = 1.000000e-02 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %13 = graph.clip(%12) {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %14 = graph.clip(%13) {min = -1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %15 = graph.clip(%14) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %15 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @unary(
// CHECK-NEXT:    %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.sigmoid(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.tanh(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.exp(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.log(%3) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = graph.sqrt(%4) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = graph.neg(%5) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = graph.abs(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %8 = graph.reciprocal(%7) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %9 = graph.identity(%8) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %10 = graph.dropout(%9) {ratio = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %11 = graph.dropout(%10) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %12 = graph.leaky_relu(%11) {alpha = 1.000000e-02 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %13 = graph.clip(%12) {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %14 = graph.clip(%13) {min = -1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %15 = graph.clip(%14) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %15 : tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

func.func @cast(%x: tensor<2x3xf32>) -> tensor<2x3xi64> {
  %0 = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @cast(
// CHECK-NEXT:    %0 = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT:    func.return %0 : tensor<2x3xi64>
// CHECK-NEXT:  }

// -----

func.func @binary(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = graph.add(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub(%0, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = graph.mul(%y, %1) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.div(%2, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.pow(%3, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %4 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @binary(
// CHECK-NEXT:    %0 = graph.add(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.sub(%0, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.mul(%y, %1) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.div(%2, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.pow(%3, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %4 : tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

func.func @variadic(%x: tensor<2x1xf32>, %y: tensor<1x3xf32>, %z: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = graph.sum(%x, %y, %z) : (tensor<2x1xf32>, tensor<1x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.max(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.min(%1, %x) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @variadic(
// CHECK-NEXT:    %0 = graph.sum(%x, %y, %z) : (tensor<2x1xf32>, tensor<1x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.max(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.min(%1, %x) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %2 : tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

func.func @linear(%a: tensor<4x2x3xf32>, %b: tensor<3x5xf32>, %v: tensor<3xf32>, %m: tensor<5x3xf32>, %c: tensor<5xf32>) -> (tensor<4x2x5xf32>, tensor<4x2xf32>, tensor<3x3xf32>, tensor<5x5xf32>) {
  %0 = graph.matmul(%a, %b) : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
  %1 = graph.matmul(%a, %v) : (tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  %2 = graph.gemm(%b, %m) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x5xf32>, tensor<5x3xf32>) -> tensor<3x3xf32>
  %3 = graph.gemm(%b, %b, %c) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 1 : i64, transB = 0 : i64} : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<5x5xf32>
  func.return %0, %1, %2, %3 : tensor<4x2x5xf32>, tensor<4x2xf32>, tensor<3x3xf32>, tensor<5x5xf32>
}
// CHECK-LABEL: func.func @linear(
// CHECK-NEXT:    %0 = graph.matmul(%a, %b) : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
// CHECK-NEXT:    %1 = graph.matmul(%a, %v) : (tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %2 = graph.gemm(%b, %m) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x5xf32>, tensor<5x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %3 = graph.gemm(%b, %b, %c) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 1 : i64, transB = 0 : i64} : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<5x5xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %3 : tensor<4x2x5xf32>, tensor<4x2xf32>, tensor<3x3xf32>, tensor<5x5xf32>
// CHECK-NEXT:  }

// -----

func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x6x6xf32>) {
  %0 = graph.conv(%x, %w, %b) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %0, %1 : tensor<1x6x4x4xf32>, tensor<1x6x6x6xf32>
}
// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %0 = graph.conv(%x, %w, %b) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT:    %1 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<1x6x4x4xf32>, tensor<1x6x6x6xf32>
// CHECK-NEXT:  }

// -----

func.func @pool(%x: tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) {
  %0 = graph.max_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.average_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %2 = graph.global_average_pool(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  %3 = graph.global_max_pool(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  func.return %0, %1, %2, %3 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}
// CHECK-LABEL: func.func @pool(
// CHECK-NEXT:    %0 = graph.max_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.average_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %2 = graph.global_average_pool(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    %3 = graph.global_max_pool(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %3 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
// CHECK-NEXT:  }

// -----

func.func @normalization(%x: tensor<1x3x4x4xf32>, %p: tensor<3xf32>, %l: tensor<2x10xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<2x10xf32>) {
  %0 = graph.batch_normalization(%x, %p, %p, %p, %p) {epsilon = 1.000000e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.lrn(%0) {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = graph.softmax(%l) {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return %0, %1, %2 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<2x10xf32>
}
// CHECK-LABEL: func.func @normalization(
// CHECK-NEXT:    %0 = graph.batch_normalization(%x, %p, %p, %p, %p) {epsilon = 1.000000e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.lrn(%0) {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %2 = graph.softmax(%l) {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<2x10xf32>
// CHECK-NEXT:  }

// -----

func.func @reshapes(%x: tensor<2x1x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2x1x3xf32>) {
  %0 = graph.reshape(%x) : (tensor<2x1x3xf32>) -> tensor<3x2xf32>
  %1 = graph.flatten(%x) {axis = 1 : i64} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
  %2 = graph.squeeze(%x) {axes = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
  %3 = graph.unsqueeze(%2) {axes = array<i64: 0, 2>} : (tensor<2x3xf32>) -> tensor<1x2x1x3xf32>
  func.return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2x1x3xf32>
}
// CHECK-LABEL: func.func @reshapes(
// CHECK-NEXT:    %0 = graph.reshape(%x) : (tensor<2x1x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %1 = graph.flatten(%x) {axis = 1 : i64} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.squeeze(%x) {axes = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.unsqueeze(%2) {axes = array<i64: 0, 2>} : (tensor<2x3xf32>) -> tensor<1x2x1x3xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2x1x3xf32>
// CHECK-NEXT:  }

// -----

// A strided view: the second half of each row, rows swapped with columns.
func.func @as_strided(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %0 = graph.as_strided(%x) {offset = 3 : i64, strides = array<i64: 1, 6>} : (tensor<4x6xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @as_strided(
// CHECK-NEXT:    %0 = graph.as_strided(%x) {offset = 3 : i64, strides = array<i64: 1, 6>} : (tensor<4x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %0 : tensor<3x4xf32>
// CHECK-NEXT:  }

// -----

func.func @data_movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<4x2x3xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>, tensor<4x5x4xf32>, tensor<3xi64>) {
  %0 = graph.transpose(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = graph.concat(%x, %x) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  %2, %3 = graph.split(%x) {axis = -2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %4 = graph.slice(%x) {starts = array<i64: 1, 0>, ends = array<i64: 3, 100>, axes = array<i64: 1, 2>, steps = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %5 = graph.gather(%x, %i) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %6 = graph.pad(%5) {pads = array<i64: 1, 0, 0, 1, 0, 0>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x5x4xf32>) -> tensor<4x5x4xf32>
  %7 = graph.shape(%x) {start = 0 : i64, end = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<3xi64>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x2x3xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>, tensor<4x5x4xf32>, tensor<3xi64>
}
// CHECK-LABEL: func.func @data_movement(
// CHECK-NEXT:    %0 = graph.transpose(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %1 = graph.concat(%x, %x) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
// CHECK-NEXT:    %2, %3 = graph.split(%x) {axis = -2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT:    %4 = graph.slice(%x) {starts = array<i64: 1, 0>, ends = array<i64: 3, 100>, axes = array<i64: 1, 2>, steps = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT:    %5 = graph.gather(%x, %i) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
// CHECK-NEXT:    %6 = graph.pad(%5) {pads = array<i64: 1, 0, 0, 1, 0, 0>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x5x4xf32>) -> tensor<4x5x4xf32>
// CHECK-NEXT:    %7 = graph.shape(%x) {start = 0 : i64, end = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<3xi64>
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x2x3xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>, tensor<4x5x4xf32>, tensor<3xi64>
// CHECK-NEXT:  }

// -----

func.func @scalar_binary(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %0 = graph.add_scalar(%x) {scalar = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub_scalar(%0) {scalar = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul_scalar(%1) {scalar = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.div_scalar(%2) {scalar = 4.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.pow_scalar(%3) {scalar = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.mul_scalar(%i) {scalar = 3.000000e+00 : f64} : (tensor<4xi64>) -> tensor<4xi64>
  func.return %4, %5 : tensor<2x3xf32>, tensor<4xi64>
}
// CHECK-LABEL: func.func @scalar_binary(
// CHECK-NEXT:    %0 = graph.add_scalar(%x) {scalar = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.sub_scalar(%0) {scalar = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.mul_scalar(%1) {scalar = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.div_scalar(%2) {scalar = 4.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.pow_scalar(%3) {scalar = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = graph.mul_scalar(%i) {scalar = 3.000000e+00 : f64} : (tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    func.return %4, %5 : tensor<2x3xf32>, tensor<4xi64>
// CHECK-NEXT:  }

// -----

func.func @layout_and_quant(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32, #layout.spec<"NHWC">>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xi8>) {
  %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
  %1 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xui8>
  %2 = graph.dequantize_linear(%1) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x3x4xui8>) -> tensor<1x2x3x4xf32>
  %3 = graph.quantize_linear(%2) {scale = 1.000000e-01 : f32, zero_point = -3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xi8>
  func.return %0, %2, %3 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xi8>
}
// CHECK-LABEL: func.func @layout_and_quant(
// CHECK-NEXT:    %0 = layout.convert %x : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %1 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xui8>
// CHECK-NEXT:    %2 = graph.dequantize_linear(%1) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x3x4xui8>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %3 = graph.quantize_linear(%2) {scale = 1.000000e-01 : f32, zero_point = -3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xi8>
// CHECK-NEXT:    func.return %0, %2, %3 : tensor<1x2x3x4xf32, #layout.spec<"NHWC">>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xi8>
// CHECK-NEXT:  }

// -----

func.func @reduce_and_fused(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %q: tensor<2x3x4xf32>, %m: tensor<2x1x3xf32>) -> (tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = graph.reduce_sum(%x) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %2 = graph.erf(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = graph.layer_normalization(%x, %s, %s) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %4 = graph.gelu(%3) {approximate = "tanh"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = graph.prelu(%4, %s) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %6 = graph.weighted_sum(%5, %x, %s) {coefficients = array<f64: 5.000000e-01, -1.000000e+00, 2.000000e+00>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %7 = graph.attention(%q, %x, %6, %m) {scale = 5.000000e-01 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x3xf32>) -> tensor<2x3x4xf32>
  func.return %0, %1, %2, %4, %5, %6, %7 : tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @reduce_and_fused(
// CHECK-NEXT:    %0 = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %1 = graph.reduce_sum(%x) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = graph.erf(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %3 = graph.layer_normalization(%x, %s, %s) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %4 = graph.gelu(%3) {approximate = "tanh"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %5 = graph.prelu(%4, %s) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %6 = graph.weighted_sum(%5, %x, %s) {coefficients = array<f64: 5.000000e-01, -1.000000e+00, 2.000000e+00>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %7 = graph.attention(%q, %x, %6, %m) {scale = 5.000000e-01 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x1x3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %4, %5, %6, %7 : tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
// CHECK-NEXT:  }

// -----

func.func @shape_operands(%x: tensor<2x3xf32>, %s: tensor<2xi64>, %a: tensor<1xi64>) -> (tensor<3x2xf32>, tensor<1x2x3xf32>, tensor<2x3xf32>) {
  %r = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %u = graph.unsqueeze(%x, %a) {axes = array<i64: 0>} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  %q = graph.squeeze(%u, %a) {axes = array<i64: 0>} : (tensor<1x2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  func.return %r, %u, %q : tensor<3x2xf32>, tensor<1x2x3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @shape_operands(
// CHECK-NEXT:    %r = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:    %u = graph.unsqueeze(%x, %a) {axes = array<i64: 0>} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
// CHECK-NEXT:    %q = graph.squeeze(%u, %a) {axes = array<i64: 0>} : (tensor<1x2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %r, %u, %q : tensor<3x2xf32>, tensor<1x2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

func.func @fusion_results(%x: tensor<1x4x3x3xf32>, %w: tensor<2x4x1x1xf32>, %b: tensor<1x1x3xf32>, %a: tensor<2x3xf32>, %m: tensor<3x4xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = graph.fused_elementwise(%x, %b) : (tensor<1x4x3x3xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3x3xf32> {
  ^bb0(%e: f32, %c: f32):
    %s = arith.addf %e, %c : f32
    %zero = arith.constant 0.000000e+00 : f32
    %six = arith.constant 6.000000e+00 : f32
    %lo = arith.maximumf %s, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    %alpha = arith.constant 1.000000e-01 : f32
    %scaled = arith.mulf %hi, %alpha : f32
    %negative = arith.cmpf olt, %hi, %zero : f32
    %leaky = arith.select %negative, %scaled, %hi : f32
    %r = arith.mulf %leaky, %e : f32
    graph.yield %r : f32
  }
  %1 = graph.channel_shuffle(%0) {group = 2 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %2 = graph.conv(%1, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "clip", activation_alpha = 0.000000e+00 : f32, activation_beta = 6.000000e+00 : f32} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x3x3xf32>
  %3 = graph.matmul(%a, %m) {activation = "leaky_relu", activation_alpha = 1.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %4 = graph.gemm(%a, %m) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64, activation = "hard_swish", activation_alpha = 0.166666672 : f32, activation_beta = 5.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %5 = graph.conv_add(%1, %w, %2) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1, %5, %3, %4 : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @fusion_results(
// CHECK-NEXT:    %0 = graph.fused_elementwise(%x, %b) : (tensor<1x4x3x3xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3x3xf32> {
// CHECK-NEXT:    ^bb0(%e: f32, %c: f32):
// CHECK-NEXT:      %s = arith.addf %e, %c : f32
// CHECK-NEXT:      %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %six = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      %lo = arith.maximumf %s, %zero : f32
// CHECK-NEXT:      %hi = arith.minimumf %lo, %six : f32
// CHECK-NEXT:      %alpha = arith.constant 1.000000e-01 : f32
// CHECK-NEXT:      %scaled = arith.mulf %hi, %alpha : f32
// CHECK-NEXT:      %negative = arith.cmpf olt, %hi, %zero : f32
// CHECK-NEXT:      %leaky = arith.select %negative, %scaled, %hi : f32
// CHECK-NEXT:      %r = arith.mulf %leaky, %e : f32
// CHECK-NEXT:      graph.yield %r : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %1 = graph.channel_shuffle(%0) {group = 2 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %2 = graph.conv(%1, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "clip", activation_alpha = 0.000000e+00 : f32, activation_beta = 6.000000e+00 : f32} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %3 = graph.matmul(%a, %m) {activation = "leaky_relu", activation_alpha = 1.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %4 = graph.gemm(%a, %m) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64, activation = "hard_swish", activation_alpha = 0.166666672 : f32, activation_beta = 5.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %5 = graph.conv_add(%1, %w, %2) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x4x3x3xf32>, tensor<2x4x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %0, %1, %5, %3, %4 : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT:  }

// -----

// A 1x1 conv and the depthwise conv of its result as one op (fuse-pointwise-depthwise).
func.func @pointwise_depthwise(%x: tensor<1x4x8x8xf32>, %w1: tensor<8x4x1x1xf32>, %b1: tensor<8xf32>, %w2: tensor<8x1x3x3xf32>, %b2: tensor<8xf32>) -> tensor<1x8x4x4xf32> {
  %y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "relu", pointwise_activation = "clip", pointwise_activation_alpha = 0.000000e+00 : f32, pointwise_activation_beta = 6.000000e+00 : f32} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}
// CHECK-LABEL: func.func @pointwise_depthwise(
// CHECK-NEXT:    %y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "relu", pointwise_activation = "clip", pointwise_activation_alpha = 0.000000e+00 : f32, pointwise_activation_beta = 6.000000e+00 : f32} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %y : tensor<1x8x4x4xf32>

// -----

func.func @reductions_and_index(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>, %v: tensor<2xf32>, %s: tensor<f32>) -> (tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<2x4xi64>, tensor<2x1x4xi64>, tensor<2x2x4xf32>, tensor<2x2x4xi64>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x5x3xf32>, tensor<6xf32>) {
  %0 = graph.reduce_max(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = graph.reduce_min(%x) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %2 = graph.reduce_prod(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %3 = graph.arg_max(%x) {axis = 1 : i64, keepdims = 0 : i64, select_last_index = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  %4 = graph.arg_min(%x) {axis = 1 : i64, keepdims = 1 : i64, select_last_index = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  %5, %6 = graph.top_k(%x) {axis = 1 : i64, k = 2 : i64, largest = 1 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xi64>)
  %7 = graph.cum_sum(%x) {axis = 2 : i64, exclusive = 0 : i64, reverse = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %8 = graph.cum_prod(%x) {axis = 0 : i64, exclusive = 1 : i64, reverse = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %9 = graph.trilu(%x) {upper = 0 : i64, k = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %10 = graph.one_hot(%i, %v) {depth = 5 : i64, axis = 1 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x5x3xf32>
  %11 = graph.range(%s, %s) : (tensor<f32>, tensor<f32>) -> tensor<6xf32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<2x4xi64>, tensor<2x1x4xi64>, tensor<2x2x4xf32>, tensor<2x2x4xi64>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x5x3xf32>, tensor<6xf32>
}
// CHECK-LABEL: func.func @reductions_and_index(
// CHECK-NEXT:    %0 = graph.reduce_max(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %1 = graph.reduce_min(%x) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = graph.reduce_prod(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    %3 = graph.arg_max(%x) {axis = 1 : i64, keepdims = 0 : i64, select_last_index = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
// CHECK-NEXT:    %4 = graph.arg_min(%x) {axis = 1 : i64, keepdims = 1 : i64, select_last_index = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT:    %5, %6 = graph.top_k(%x) {axis = 1 : i64, k = 2 : i64, largest = 1 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xi64>)
// CHECK-NEXT:    %7 = graph.cum_sum(%x) {axis = 2 : i64, exclusive = 0 : i64, reverse = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %8 = graph.cum_prod(%x) {axis = 0 : i64, exclusive = 1 : i64, reverse = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %9 = graph.trilu(%x) {upper = 0 : i64, k = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %10 = graph.one_hot(%i, %v) {depth = 5 : i64, axis = 1 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT:    %11 = graph.range(%s, %s) : (tensor<f32>, tensor<f32>) -> tensor<6xf32>
// CHECK-NEXT:    func.return

// -----

// The order that sorts the slices along an axis (Unique along an axis), of any size.
func.func @lex_order(%x: tensor<4x3xf32>, %y: tensor<?x2x?xi64, #graph.dims<["n", "m"]>>) -> (tensor<3xi64>, tensor<?xi64, #graph.dims<["n"]>>) {
  %0 = graph.lex_order(%x) {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<3xi64>
  %1 = graph.lex_order(%y) {axis = 0 : i64} : (tensor<?x2x?xi64, #graph.dims<["n", "m"]>>) -> tensor<?xi64, #graph.dims<["n"]>>
  func.return %0, %1 : tensor<3xi64>, tensor<?xi64, #graph.dims<["n"]>>
}
// CHECK-LABEL: func.func @lex_order(
// CHECK-NEXT:    %0 = graph.lex_order(%x) {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<3xi64>
// CHECK-NEXT:    %1 = graph.lex_order(%y) {axis = 0 : i64} : (tensor<?x2x?xi64, #graph.dims<["n", "m"]>>) -> tensor<?xi64, #graph.dims<["n"]>>
// CHECK-NEXT:    func.return

// -----

func.func @logic_and_unary_math(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %b: tensor<2x3xi1>, %c: tensor<3xi1>, %u: tensor<2x3xui8>, %i: tensor<2x3xi32>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xui8>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>) {
  %0 = graph.equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = graph.less(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = graph.less_or_equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = graph.greater(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %4 = graph.greater_or_equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %5 = graph.and(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %6 = graph.or(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %7 = graph.xor(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %8 = graph.not(%b) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %9 = graph.bitwise_and(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %10 = graph.bitwise_or(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %11 = graph.bitwise_xor(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %12 = graph.bitwise_not(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %13 = graph.bit_shift(%u, %u) {direction = "LEFT"} : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xui8>
  %14 = graph.mod(%i, %i) {fmod = 0 : i64} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %15 = graph.mod(%x, %y) {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %16 = graph.where(%c, %x, %y) : (tensor<3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %17 = graph.is_nan(%x) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %18 = graph.is_inf(%x) {detect_positive = 1 : i64, detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %19 = graph.ceil(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %20 = graph.floor(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %21 = graph.round(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %22 = graph.sign(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %23 = graph.sin(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %24 = graph.cos(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %25 = graph.tan(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %26 = graph.asin(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %27 = graph.acos(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %28 = graph.atan(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %29 = graph.sinh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %30 = graph.cosh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %31 = graph.asinh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %32 = graph.acosh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %33 = graph.atanh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %34 = graph.softplus(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %35 = graph.mish(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %36 = graph.thresholded_relu(%x) {alpha = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %37 = graph.shrink(%x) {bias = 0.000000e+00 : f32, lambd = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %38 = graph.bit_cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xui8>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>
}
// CHECK-LABEL: func.func @logic_and_unary_math(
// CHECK-NEXT:    %0 = graph.equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %1 = graph.less(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %2 = graph.less_or_equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %3 = graph.greater(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %4 = graph.greater_or_equal(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %5 = graph.and(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %6 = graph.or(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %7 = graph.xor(%b, %c) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %8 = graph.not(%b) : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %9 = graph.bitwise_and(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %10 = graph.bitwise_or(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %11 = graph.bitwise_xor(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %12 = graph.bitwise_not(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %13 = graph.bit_shift(%u, %u) {direction = "LEFT"} : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xui8>
// CHECK-NEXT:    %14 = graph.mod(%i, %i) {fmod = 0 : i64} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %15 = graph.mod(%x, %y) {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %16 = graph.where(%c, %x, %y) : (tensor<3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %17 = graph.is_nan(%x) : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %18 = graph.is_inf(%x) {detect_positive = 1 : i64, detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %19 = graph.ceil(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %20 = graph.floor(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %21 = graph.round(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %22 = graph.sign(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %23 = graph.sin(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %24 = graph.cos(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %25 = graph.tan(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %26 = graph.asin(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %27 = graph.acos(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %28 = graph.atan(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %29 = graph.sinh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %30 = graph.cosh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %31 = graph.asinh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %32 = graph.acosh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %33 = graph.atanh(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %34 = graph.softplus(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %35 = graph.mish(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %36 = graph.thresholded_relu(%x) {alpha = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %37 = graph.shrink(%x) {bias = 0.000000e+00 : f32, lambd = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %38 = graph.bit_cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return

// -----

// Data movement by run-time indices and CNN/detection layers (graph_gather_scatter,
// graph_vision, graph_resize).
func.func @tensor_data(%x: tensor<1x2x4x4xf32>, %i: tensor<1x2x4x4xi64>, %n: tensor<2x2xi64>, %r: tensor<3x4xf32>, %b: tensor<3xi64>, %g: tensor<1x3x3x2xf32>, %o: tensor<1x18x2x2xf32>, %w: tensor<2x3x3x3xf32>, %s: tensor<3x4xf32>, %l: tensor<3xi32>, %u: tensor<1x2x2x4xf32>, %c: tensor<1x18x4xf32>, %t: tensor<1xi64>) {
  %0 = graph.resize(%x) {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64, antialias = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, roi = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  %1 = graph.gather_elements(%x, %i) {axis = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x4x4xf32>
  %2 = graph.gather_nd(%x, %n) {batch_dims = 0 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2xi64>) -> tensor<2x4x4xf32>
  %3 = graph.scatter_elements(%x, %i, %x) {axis = 3 : i64, reduction = "add"} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %4 = graph.scatter_nd(%x, %n, %2) {reduction = "none"} : (tensor<1x2x4x4xf32>, tensor<2x2xi64>, tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %5 = graph.tile(%r) {repeats = array<i64: 2, 1>} : (tensor<3x4xf32>) -> tensor<6x4xf32>
  %6 = graph.reverse_sequence(%r, %b) {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %7 = graph.conv_transpose(%x, %w) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x7x7xf32>
  %8 = graph.col2im(%c) {block_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x18x4xf32>) -> tensor<1x2x4x4xf32>
  %9 = graph.grid_sample(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0 : i64} : (tensor<1x2x4x4xf32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  %10 = graph.roi_align(%x, %s, %l) {mode = "avg", sampling_ratio = 0 : i64, spatial_scale = 1.000000e+00 : f64, half_pixel = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x4xf32>, tensor<3xi32>) -> tensor<3x2x2x2xf32>
  %11 = graph.deform_columns(%x, %o) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, offset_group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x18x2x2xf32>) -> tensor<1x18x4xf32>
  %12, %13 = graph.max_pool_indices(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64, storage_order = 0 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
  %14 = graph.max_unpool(%12, %13) {unpooled = array<i64: 1, 2, 4, 4>} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>) -> tensor<1x2x4x4xf32>
  %15 = graph.tensor_scatter(%x, %u, %t) {axis = 2 : i64, circular = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x2x4xf32>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @tensor_data(
// CHECK-NEXT:    %0 = graph.resize(%x) {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64, antialias = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, roi = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
// CHECK-NEXT:    %1 = graph.gather_elements(%x, %i) {axis = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %2 = graph.gather_nd(%x, %n) {batch_dims = 0 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2xi64>) -> tensor<2x4x4xf32>
// CHECK-NEXT:    %3 = graph.scatter_elements(%x, %i, %x) {axis = 3 : i64, reduction = "add"} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %4 = graph.scatter_nd(%x, %n, %2) {reduction = "none"} : (tensor<1x2x4x4xf32>, tensor<2x2xi64>, tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %5 = graph.tile(%r) {repeats = array<i64: 2, 1>} : (tensor<3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %6 = graph.reverse_sequence(%r, %b) {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-NEXT:    %7 = graph.conv_transpose(%x, %w) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x7x7xf32>
// CHECK-NEXT:    %8 = graph.col2im(%c) {block_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x18x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %9 = graph.grid_sample(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0 : i64} : (tensor<1x2x4x4xf32>, tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %10 = graph.roi_align(%x, %s, %l) {mode = "avg", sampling_ratio = 0 : i64, spatial_scale = 1.000000e+00 : f64, half_pixel = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x4xf32>, tensor<3xi32>) -> tensor<3x2x2x2xf32>
// CHECK-NEXT:    %11 = graph.deform_columns(%x, %o) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, offset_group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x18x2x2xf32>) -> tensor<1x18x4xf32>
// CHECK-NEXT:    %12, %13 = graph.max_pool_indices(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64, storage_order = 0 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
// CHECK-NEXT:    %14 = graph.max_unpool(%12, %13) {unpooled = array<i64: 1, 2, 4, 4>} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %15 = graph.tensor_scatter(%x, %u, %t) {axis = 2 : i64, circular = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x2x4xf32>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// -----

// Run-time checks of indices, integer divisors and symbolic sizes (graph_checks): no
// results, kept by DCE.
func.func @checks(%i: tensor<2x2xi64>, %d: tensor<3xi32>) {
  graph.check_indices(%i) {bounds = array<i64: 4, 3>, negative = 1 : i64, node = "g", op_type = "GatherND", operand = "indices"} : tensor<2x2xi64>
  graph.check_divisor(%d) {node = "q", op_type = "Div", operand = "B"} : tensor<3xi32>
  graph.check_sizes {guard = "floordiv(h+1, 2)-1 >= 0", reason = "window fits", node = "c", op_type = "Conv", operand = "sizes"}
  func.return
}

// CHECK-LABEL: func.func @checks(
// CHECK-NEXT:    graph.check_indices(%i) {bounds = array<i64: 4, 3>, negative = 1 : i64, node = "g", op_type = "GatherND", operand = "indices"} : tensor<2x2xi64>
// CHECK-NEXT:    graph.check_divisor(%d) {node = "q", op_type = "Div", operand = "B"} : tensor<3xi32>
// CHECK-NEXT:    graph.check_sizes {guard = "floordiv(h+1, 2)-1 >= 0", reason = "window fits", node = "c", op_type = "Conv", operand = "sizes"}
// CHECK-NEXT:    func.return

// -----

// DynamicQuantizeLinear (graph_quant): the scale and zero point come from the data.
func.func @dynamic_quant(%x: tensor<2x3xf32>) -> (tensor<2x3xui8>, tensor<f32>, tensor<ui8>) {
  %y, %s, %z = graph.dynamic_quantize_linear(%x) : (tensor<2x3xf32>) -> (tensor<2x3xui8>, tensor<f32>, tensor<ui8>)
  func.return %y, %s, %z : tensor<2x3xui8>, tensor<f32>, tensor<ui8>
}

// CHECK-LABEL: func.func @dynamic_quant(
// CHECK-NEXT:    %y, %s, %z = graph.dynamic_quantize_linear(%x) : (tensor<2x3xf32>) -> (tensor<2x3xui8>, tensor<f32>, tensor<ui8>)
// CHECK-NEXT:    func.return %y, %s, %z

// -----

// QLinearConv / ConvInteger (graph_qlinear): i32 accumulators requantized to ui8 with a
// per-channel scale, Relu fused as output_min; and the raw i32 form.
func.func @qlinear_conv(%x: tensor<1x8x4x4xui8>, %w: tensor<2x8x3x3xi8>, %b: tensor<2xi32>) -> (tensor<1x2x4x4xui8>, tensor<1x2x2x2xi32>) {
  %y = graph.qlinear_conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 128 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01, 0.02>, output_zero_point = 3 : i64, output_min = 3 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x3x3xi8>, tensor<2xi32>) -> tensor<1x2x4x4xui8>
  %i = graph.qlinear_conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 1, -1>} : (tensor<1x8x4x4xui8>, tensor<2x8x3x3xi8>) -> tensor<1x2x2x2xi32>
  func.return %y, %i : tensor<1x2x4x4xui8>, tensor<1x2x2x2xi32>
}

// CHECK-LABEL: func.func @qlinear_conv(
// CHECK-NEXT:    %y = graph.qlinear_conv(%x, %w, %b) {{.*}}output_scale = array<f32: 1.000000e-02, 2.000000e-02>, output_zero_point = 3 : i64, output_min = 3 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x3x3xi8>, tensor<2xi32>) -> tensor<1x2x4x4xui8>
// CHECK-NEXT:    %i = graph.qlinear_conv(%x, %w) {{.*}}weight_zero_point = array<i64: 1, -1>} : (tensor<1x8x4x4xui8>, tensor<2x8x3x3xi8>) -> tensor<1x2x2x2xi32>

// -----

// qlinear_conv_add (graph_qlinear): the conv's ui8 result plus a residual, requantized by the
// three scales (conv result, addend, sum) with the sum's bounds narrowed by a Relu.
func.func @qlinear_conv_add(%x: tensor<1x8x4x4xui8>, %w: tensor<16x8x1x1xi8>, %b: tensor<16xi32>, %a: tensor<1x16x4x4xui8>) -> tensor<1x16x4x4xui8> {
  %y = graph.qlinear_conv_add(%x, %w, %b, %a) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 128 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01>, output_zero_point = 3 : i64, addend_zero_point = 7 : i64, sum_scales = array<f32: 0.5, 0.25, 0.75>, sum_zero_point = 2 : i64, sum_min = 2 : i64} : (tensor<1x8x4x4xui8>, tensor<16x8x1x1xi8>, tensor<16xi32>, tensor<1x16x4x4xui8>) -> tensor<1x16x4x4xui8>
  func.return %y : tensor<1x16x4x4xui8>
}

// CHECK-LABEL: func.func @qlinear_conv_add(
// CHECK-NEXT:    %y = graph.qlinear_conv_add(%x, %w, %b, %a) {{.*}}addend_zero_point = 7 : i64, sum_scales = array<f32: 5.000000e-01, 2.500000e-01, 7.500000e-01>, sum_zero_point = 2 : i64, sum_min = 2 : i64} : (tensor<1x8x4x4xui8>, tensor<16x8x1x1xi8>, tensor<16xi32>, tensor<1x16x4x4xui8>) -> tensor<1x16x4x4xui8>

// -----

// QLinearMatMul (graph_qlinear): the f32 form of a DQ -> MatMul with no Q after it.
func.func @qlinear_matmul(%a: tensor<4x8xui8>, %b: tensor<8x3xi8>) -> tensor<4x3xf32> {
  %y = graph.qlinear_matmul(%a, %b) {input_zero_point = 128 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>} : (tensor<4x8xui8>, tensor<8x3xi8>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @qlinear_matmul(
// CHECK-NEXT:    %y = graph.qlinear_matmul(%a, %b) {input_zero_point = 128 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 5.000000e-01>} : (tensor<4x8xui8>, tensor<8x3xi8>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %y

// -----

// MatMulNBits (graph_weight_quant): a symbolic number of rows times 4-bit weights packed
// [N, k_blocks, blob], float scales and zero points per block, an act-order group index.
func.func @matmul_weight_quantized(%a: tensor<?x32xf32, #graph.dims<["m"]>>, %b: tensor<3x2x8xui8>, %s: tensor<3x2xf32>, %z: tensor<3x2xf32>, %bias: tensor<3xf32>) -> tensor<?x3xf32, #graph.dims<["m"]>> {
  %y = graph.matmul_weight_quantized(%a, %b, %s, %z, %bias) {bits = 4 : i64, block_size = 16 : i64, group_index = array<i64: 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1>, accuracy_level = 4 : i64} : (tensor<?x32xf32, #graph.dims<["m"]>>, tensor<3x2x8xui8>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<?x3xf32, #graph.dims<["m"]>>
  func.return %y : tensor<?x3xf32, #graph.dims<["m"]>>
}

// CHECK-LABEL: func.func @matmul_weight_quantized(
// CHECK-NEXT:    %y = graph.matmul_weight_quantized(%a, %b, %s, %z, %bias) {bits = 4 : i64, block_size = 16 : i64, group_index = array<i64: 0, 1, {{.*}}>, accuracy_level = 4 : i64} : (tensor<?x32xf32, #graph.dims<["m"]>>, tensor<3x2x8xui8>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<?x3xf32, #graph.dims<["m"]>>
// CHECK-NEXT:    func.return %y

// -----

// The recurrences (every operand form in rnn.mlir).
func.func @recurrences(%g4: tensor<2x1x1x8xf32>, %g3: tensor<2x1x1x6xf32>, %g1: tensor<2x1x1x2xf32>, %r4: tensor<1x8x2xf32>, %r3: tensor<1x6x2xf32>, %r1: tensor<1x2x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %y, %yh, %yc = graph.lstm_recurrence(%g4, %r4) {direction = "forward", activations = ["Sigmoid", "Tanh", "Tanh"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00>, layout = 0 : i64, input_forget = 0 : i64} : tensor<2x1x1x8xf32>, tensor<1x8x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>
  %y1, %yh1 = graph.gru_recurrence(%g3, %r3) {direction = "forward", activations = ["Sigmoid", "Tanh"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00>, layout = 0 : i64, linear_before_reset = 0 : i64} : tensor<2x1x1x6xf32>, tensor<1x6x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>
  %y2, %yh2 = graph.rnn_recurrence(%g1, %r1) {direction = "reverse", activations = ["Tanh"], activation_alpha = array<f64: 0.000000e+00>, activation_beta = array<f64: 0.000000e+00>, layout = 0 : i64} : tensor<2x1x1x2xf32>, tensor<1x2x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>
  func.return %yh, %yh1, %yh2 : tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// CHECK-LABEL: func.func @recurrences(
// CHECK-NEXT:    %y, %yh, %yc = graph.lstm_recurrence(%g4, %r4) {direction = "forward", {{.*}}} : tensor<2x1x1x8xf32>, tensor<1x8x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>
// CHECK-NEXT:    %y1, %yh1 = graph.gru_recurrence(%g3, %r3) {direction = "forward", {{.*}}} : tensor<2x1x1x6xf32>, tensor<1x6x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>
// CHECK-NEXT:    %y2, %yh2 = graph.rnn_recurrence(%g1, %r1) {direction = "reverse", {{.*}}} : tensor<2x1x1x2xf32>, tensor<1x2x2xf32> -> tensor<2x1x1x2xf32>, tensor<1x1x2xf32>
// CHECK-NEXT:    func.return %yh, %yh1, %yh2

// -----

// Tree ensembles (graph_trees): canonical tables, a leaf is its own two children.
func.func @tree_ensembles(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2xi64>, tensor<2x2xf32>) {
  %y = graph.tree_ensemble_regressor(%x) {features = array<i32: 0, 1, 0, 0, 0, 2, 0, 0>, lower = array<i32: -8388608, -8388608, -8388608, -8388608, -8388608, 1036831950, -8388608, -8388608>, upper = array<i32: 1056964608, 1045220556, 2139095040, 2139095040, 2139095040, 2139095040, 2139095040, 2139095040>, children = array<i32: 1, 2, 3, 4, 2, 2, 3, 3, 4, 4, 6, 7, 6, 6, 7, 7>, nan_inside = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, roots = array<i32: 0, 5>, depths = array<i32: 2, 1>, leaf_weights = array<f32: 0.000000e+00, 0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 0.000000e+00, 1.000000e+01, 2.000000e+01>, has_weight = array<i32: 0, 0, 1, 1, 1, 0, 1, 1>, base_values = array<f32: 5.000000e-01>, aggregate = "SUM", post_transform = "NONE"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %l, %s = graph.tree_ensemble_classifier(%x) {features = array<i32: 0, 0, 0>, lower = array<i32: -8388608, -8388608, -8388608>, upper = array<i32: 1048576000, 2139095040, 2139095040>, children = array<i32: 1, 2, 1, 1, 2, 2>, nan_inside = array<i32: 0, 0, 0>, roots = array<i32: 0>, depths = array<i32: 1>, leaf_weights = array<f32: 0.000000e+00, -1.500000e+00, 2.000000e+00>, has_weight = array<i32: 0, 1, 1>, base_values = array<f32: 1.000000e-01>, aggregate = "SUM", post_transform = "LOGISTIC", class_labels = array<i64: 4, 9>, binary = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2xi64>, tensor<2x2xf32>)
  func.return %y, %l, %s : tensor<2x1xf32>, tensor<2xi64>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @tree_ensembles(
// CHECK-NEXT:    %y = graph.tree_ensemble_regressor(%x) {features = array<i32: 0, 1, 0, 0, 0, 2, 0, 0>, lower = array<i32: -8388608, -8388608, -8388608, -8388608, -8388608, 1036831950, -8388608, -8388608>, upper = array<i32: 1056964608, 1045220556, 2139095040, 2139095040, 2139095040, 2139095040, 2139095040, 2139095040>, children = array<i32: 1, 2, 3, 4, 2, 2, 3, 3, 4, 4, 6, 7, 6, 6, 7, 7>, nan_inside = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, roots = array<i32: 0, 5>, depths = array<i32: 2, 1>, leaf_weights = array<f32: 0.000000e+00, 0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 0.000000e+00, 1.000000e+01, 2.000000e+01>, has_weight = array<i32: 0, 0, 1, 1, 1, 0, 1, 1>, base_values = array<f32: 5.000000e-01>, aggregate = "SUM", post_transform = "NONE"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %l, %s = graph.tree_ensemble_classifier(%x) {features = array<i32: 0, 0, 0>, lower = array<i32: -8388608, -8388608, -8388608>, upper = array<i32: 1048576000, 2139095040, 2139095040>, children = array<i32: 1, 2, 1, 1, 2, 2>, nan_inside = array<i32: 0, 0, 0>, roots = array<i32: 0>, depths = array<i32: 1>, leaf_weights = array<f32: 0.000000e+00, -1.500000e+00, 2.000000e+00>, has_weight = array<i32: 0, 1, 1>, base_values = array<f32: 1.000000e-01>, aggregate = "SUM", post_transform = "LOGISTIC", class_labels = array<i64: 4, 9>, binary = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2xi64>, tensor<2x2xf32>)
// CHECK-NEXT:    func.return %y, %l, %s : tensor<2x1xf32>, tensor<2xi64>, tensor<2x2xf32>
// CHECK-NEXT:  }

// -----

func.func @rms_normalization(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %t: tensor<1x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = graph.rms_normalization(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %1 = graph.rms_normalization(%x, %t) {axis = -1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<1x4xf32>) -> tensor<2x3x4xf32>
  func.return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @rms_normalization(
// CHECK-NEXT:    %0 = graph.rms_normalization(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %1 = graph.rms_normalization(%x, %t) {axis = -1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
// CHECK-NEXT:  }

// -----

func.func @layer_normalization_stats(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x3x1xf32>) {
  %y, %mean, %inv = graph.layer_normalization_stats(%x, %s, %b) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %y1, %mean1, %inv1 = graph.layer_normalization_stats(%y, %b) {axis = -1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  func.return %y1, %mean, %inv1 : tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x3x1xf32>
}
// CHECK-LABEL: func.func @layer_normalization_stats(
// CHECK-NEXT:    %y, %mean, %inv = graph.layer_normalization_stats(%x, %s, %b) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK-NEXT:    %y1, %mean1, %inv1 = graph.layer_normalization_stats(%y, %b) {axis = -1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT:    func.return %y1, %mean, %inv1 : tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x3x1xf32>
// CHECK-NEXT:  }

// -----

func.func @control_flow(%c: tensor<i1>, %n: tensor<i64>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %y = graph.if(%c) {
    %a = graph.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %a : tensor<3xf32>
  } else {
    graph.yield %x : tensor<3xf32>
  } : (tensor<i1>) -> tensor<3xf32>
  %v, %vs = graph.loop(%n, %c, %y) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<3xf32>):
    %next = graph.add(%acc, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    graph.yield %go, %next, %acc : tensor<i1>, tensor<3xf32>, tensor<3xf32>
  } {iterations = 2 : i64} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>)
  func.return %y, %v, %vs : tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @control_flow(
// CHECK-NEXT:    %y = graph.if(%c) {
// CHECK-NEXT:      %a = graph.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:      graph.yield %a : tensor<3xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      graph.yield %x : tensor<3xf32>
// CHECK-NEXT:    } : (tensor<i1>) -> tensor<3xf32>
// CHECK-NEXT:    %v, %vs = graph.loop(%n, %c, %y) {
// CHECK-NEXT:    ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<3xf32>):
// CHECK-NEXT:      %next = graph.add(%acc, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:      graph.yield %go, %next, %acc : tensor<i1>, tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT:    } {iterations = 2 : i64} : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>)
// CHECK-NEXT:    func.return %y, %v, %vs : tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

// An op whose result size is data (graph_dynamic): it names the run symbol it defines.
func.func @dynamic(%x: tensor<?x4xf32, #graph.dims<["a"]>>) -> tensor<2x?xi64, #graph.dims<["n"]>> {
  %nz = graph.nonzero(%x) {defines = ["n"]} : (tensor<?x4xf32, #graph.dims<["a"]>>) -> tensor<2x?xi64, #graph.dims<["n"]>>
  func.return %nz : tensor<2x?xi64, #graph.dims<["n"]>>
}

// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT:    %nz = graph.nonzero(%x) {defines = ["n"]} : (tensor<?x4xf32, #graph.dims<["a"]>>) -> tensor<2x?xi64, #graph.dims<["n"]>>

// -----

// Sizes the run decides: NMS's kept count, and shape data bound as sizes.
func.func @dynamic_sizes(%b: tensor<1x?x4xf32, #graph.dims<["n"]>>, %s: tensor<1x2x?xf32, #graph.dims<["n"]>>, %m: tensor<1xi64>, %iou: tensor<1xf32>, %st: tensor<1xf32>, %shape: tensor<2xi64>) -> tensor<?x3xi64, #graph.dims<["k"]>> {
  %sel = graph.non_max_suppression(%b, %s, %m, %iou, %st) {center_point_box = 0 : i64, defines = ["k"], score_filter = 1 : i64} : (tensor<1x?x4xf32, #graph.dims<["n"]>>, tensor<1x2x?xf32, #graph.dims<["n"]>>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64, #graph.dims<["k"]>>
  graph.bind_sizes(%shape) {defines = ["h", "w"]} : tensor<2xi64>
  graph.bind_sizes(%shape) {defines = ["s", "e"], bounds = #graph.sizes<["n", "n"]>} : tensor<2xi64>
  func.return %sel : tensor<?x3xi64, #graph.dims<["k"]>>
}

// CHECK-LABEL: func.func @dynamic_sizes(
// CHECK-NEXT:    %sel = graph.non_max_suppression(%b, %s, %m, %iou, %st) {center_point_box = 0 : i64, defines = ["k"], score_filter = 1 : i64} : (tensor<1x?x4xf32, #graph.dims<["n"]>>, tensor<1x2x?xf32, #graph.dims<["n"]>>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64, #graph.dims<["k"]>>
// CHECK-NEXT:    graph.bind_sizes(%shape) {defines = ["h", "w"]} : tensor<2xi64>
// CHECK-NEXT:    graph.bind_sizes(%shape) {defines = ["s", "e"], bounds = #graph.sizes<["n", "n"]>} : tensor<2xi64>
// CHECK-NEXT:    func.return %sel : tensor<?x3xi64, #graph.dims<["k"]>>
// CHECK-NEXT:  }

// -----

// An If whose branches yield different sizes defines a run symbol for each such dimension.
func.func @if_of_sizes(%c: tensor<i1>, %x: tensor<?xf32, #graph.dims<["n"]>>) -> tensor<?xf32, #graph.dims<["m"]>> {
  %y = graph.if(%c) {
    %e = graph.constant {value = dense<> : tensor<0xf32>} : tensor<0xf32>
    graph.yield %e : tensor<0xf32>
  } else {
    graph.yield %x : tensor<?xf32, #graph.dims<["n"]>>
  } {defines = ["m"]} : (tensor<i1>) -> tensor<?xf32, #graph.dims<["m"]>>
  func.return %y : tensor<?xf32, #graph.dims<["m"]>>
}

// CHECK-LABEL: func.func @if_of_sizes(
// CHECK-NEXT:    %y = graph.if(%c) {
// CHECK-NEXT:      %e = graph.constant {value = dense<> : tensor<0xf32>} : tensor<0xf32>
// CHECK-NEXT:      graph.yield %e : tensor<0xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      graph.yield %x : tensor<?xf32, #graph.dims<["n"]>>
// CHECK-NEXT:    } {defines = ["m"]} : (tensor<i1>) -> tensor<?xf32, #graph.dims<["m"]>>
// CHECK-NEXT:    func.return %y : tensor<?xf32, #graph.dims<["m"]>>
// CHECK-NEXT:  }

// -----

func.func @strings(%x: tensor<2x!graph.string>) -> (tensor<2x!graph.string>, tensor<2xi1>) {
  %d = graph.constant {value = dense<[104, 105, 33]> : tensor<3xui8>} : tensor<3xui8>
  %p = graph.constant {value = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>} : tensor<2x2xi64>
  %s = graph.strings(%d, %p) : (tensor<3xui8>, tensor<2x2xi64>) -> tensor<2x!graph.string>
  %e = graph.equal(%x, %s) : (tensor<2x!graph.string>, tensor<2x!graph.string>) -> tensor<2xi1>
  func.return %s, %e : tensor<2x!graph.string>, tensor<2xi1>
}

// CHECK-LABEL: func.func @strings(
// CHECK-NEXT:    %d = graph.constant {value = dense<[104, 105, 33]> : tensor<3xui8>} : tensor<3xui8>
// CHECK-NEXT:    %p = graph.constant {value = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT:    %s = graph.strings(%d, %p) : (tensor<3xui8>, tensor<2x2xi64>) -> tensor<2x!graph.string>
// CHECK-NEXT:    %e = graph.equal(%x, %s) : (tensor<2x!graph.string>, tensor<2x!graph.string>) -> tensor<2xi1>
// CHECK-NEXT:    func.return %s, %e : tensor<2x!graph.string>, tensor<2xi1>
// CHECK-NEXT:  }

// -----

func.func @regex_full_match(%x: tensor<?x!graph.string, #graph.dims<["n"]>>) -> tensor<?xi1, #graph.dims<["n"]>> {
  %m = graph.regex_full_match(%x) {pattern = "[a-z]+@.*"} : (tensor<?x!graph.string, #graph.dims<["n"]>>) -> tensor<?xi1, #graph.dims<["n"]>>
  func.return %m : tensor<?xi1, #graph.dims<["n"]>>
}

// CHECK-LABEL: func.func @regex_full_match(
// CHECK-NEXT:    %m = graph.regex_full_match(%x) {pattern = "[a-z]+@.*"} : (tensor<?x!graph.string, #graph.dims<["n"]>>) -> tensor<?xi1, #graph.dims<["n"]>>
// CHECK-NEXT:    func.return %m : tensor<?xi1, #graph.dims<["n"]>>
// CHECK-NEXT:  }

// -----

func.func @random(%x: tensor<2x?xi64, #graph.dims<["n"]>>) -> (tensor<3x4xf32>, tensor<2x?xf16, #graph.dims<["n"]>>) {
  %0 = graph.random() {distribution = "uniform", a = -1.000000e+00 : f64, b = 2.000000e+00 : f64, seed = 3.000000e+00 : f64} : () -> tensor<3x4xf32>
  %1 = graph.random(%x) {distribution = "normal", a = 0.000000e+00 : f64, b = 1.000000e+00 : f64} : (tensor<2x?xi64, #graph.dims<["n"]>>) -> tensor<2x?xf16, #graph.dims<["n"]>>
  func.return %0, %1 : tensor<3x4xf32>, tensor<2x?xf16, #graph.dims<["n"]>>
}

// CHECK-LABEL: func.func @random(
// CHECK-NEXT:    %0 = graph.random() {distribution = "uniform", a = -1.000000e+00 : f64, b = 2.000000e+00 : f64, seed = 3.000000e+00 : f64} : () -> tensor<3x4xf32>
// CHECK-NEXT:    %1 = graph.random(%x) {distribution = "normal", a = 0.000000e+00 : f64, b = 1.000000e+00 : f64} : (tensor<2x?xi64, #graph.dims<["n"]>>) -> tensor<2x?xf16, #graph.dims<["n"]>>
// CHECK-NEXT:    func.return %0, %1 : tensor<3x4xf32>, tensor<2x?xf16, #graph.dims<["n"]>>
// CHECK-NEXT:  }

// -----

func.func @max_roi_pool(%x: tensor<2x3x8x8xf32>, %r: tensor<4x5xf32>, %b: tensor<4xi64>) -> tensor<4x3x2x3xf32> {
  %0 = graph.max_roi_pool(%x, %r, %b) {spatial_scale = 5.000000e-01 : f64} : (tensor<2x3x8x8xf32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
  func.return %0 : tensor<4x3x2x3xf32>
}

// CHECK-LABEL: func.func @max_roi_pool(
// CHECK-NEXT:    %0 = graph.max_roi_pool(%x, %r, %b) {spatial_scale = 5.000000e-01 : f64} : (tensor<2x3x8x8xf32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x3x2x3xf32>
// CHECK-NEXT:    func.return %0 : tensor<4x3x2x3xf32>
// CHECK-NEXT:  }

// -----

func.func @string_split(%x: tensor<3x!graph.string>) -> (tensor<3x?x!graph.string, #graph.dims<["k"]>>, tensor<3xi64>) {
  %p, %n = graph.string_split(%x) {defines = ["k"], delimiter = ",", maxsplit = -1 : i64} : (tensor<3x!graph.string>) -> (tensor<3x?x!graph.string, #graph.dims<["k"]>>, tensor<3xi64>)
  func.return %p, %n : tensor<3x?x!graph.string, #graph.dims<["k"]>>, tensor<3xi64>
}

// CHECK-LABEL: func.func @string_split(
// CHECK-NEXT:    %p, %n = graph.string_split(%x) {defines = ["k"], delimiter = ",", maxsplit = -1 : i64} : (tensor<3x!graph.string>) -> (tensor<3x?x!graph.string, #graph.dims<["k"]>>, tensor<3xi64>)
// CHECK-NEXT:    func.return %p, %n : tensor<3x?x!graph.string, #graph.dims<["k"]>>, tensor<3xi64>
// CHECK-NEXT:  }

// -----

func.func @linalg(%x: tensor<?x3x3xf32, #graph.dims<["b"]>>) -> (tensor<?xf32, #graph.dims<["b"]>>, tensor<?x3x3xf32, #graph.dims<["b"]>>) {
  %0 = graph.det(%x) : (tensor<?x3x3xf32, #graph.dims<["b"]>>) -> tensor<?xf32, #graph.dims<["b"]>>
  %1 = graph.inverse(%x) : (tensor<?x3x3xf32, #graph.dims<["b"]>>) -> tensor<?x3x3xf32, #graph.dims<["b"]>>
  func.return %0, %1 : tensor<?xf32, #graph.dims<["b"]>>, tensor<?x3x3xf32, #graph.dims<["b"]>>
}

// CHECK-LABEL: func.func @linalg(
// CHECK-NEXT:    %0 = graph.det(%x) : (tensor<?x3x3xf32, #graph.dims<["b"]>>) -> tensor<?xf32, #graph.dims<["b"]>>
// CHECK-NEXT:    %1 = graph.inverse(%x) : (tensor<?x3x3xf32, #graph.dims<["b"]>>) -> tensor<?x3x3xf32, #graph.dims<["b"]>>
// CHECK-NEXT:    func.return %0, %1 : tensor<?xf32, #graph.dims<["b"]>>, tensor<?x3x3xf32, #graph.dims<["b"]>>
// CHECK-NEXT:  }

// -----

func.func @string_keep(%x: tensor<4x!graph.string>, %k: tensor<4xi1>) -> tensor<?x!graph.string, #graph.dims<["n"]>> {
  %y = graph.string_keep(%x, %k) {defines = ["n"]} : (tensor<4x!graph.string>, tensor<4xi1>) -> tensor<?x!graph.string, #graph.dims<["n"]>>
  func.return %y : tensor<?x!graph.string, #graph.dims<["n"]>>
}

// CHECK-LABEL: func.func @string_keep(
// CHECK-NEXT:    %y = graph.string_keep(%x, %k) {defines = ["n"]} : (tensor<4x!graph.string>, tensor<4xi1>) -> tensor<?x!graph.string, #graph.dims<["n"]>>
// CHECK-NEXT:    func.return %y : tensor<?x!graph.string, #graph.dims<["n"]>>
// CHECK-NEXT:  }

// -----

func.func @string_bytes(%a: tensor<2x!graph.string>, %b: tensor<!graph.string>) -> (tensor<2x!graph.string>, tensor<2x!graph.string>) {
  %d, %c = graph.string_concat(%a, %b) {defines = ["n"]} : (tensor<2x!graph.string>, tensor<!graph.string>) -> (tensor<?xi8, #graph.dims<["n"]>>, tensor<2x!graph.string>)
  %e, %u = graph.string_case(%c) {defines = ["m"], upper = 1 : i64} : (tensor<2x!graph.string>) -> (tensor<?xi8, #graph.dims<["m"]>>, tensor<2x!graph.string>)
  func.return %c, %u : tensor<2x!graph.string>, tensor<2x!graph.string>
}

// CHECK-LABEL: func.func @string_bytes(
// CHECK-NEXT:    %d, %c = graph.string_concat(%a, %b) {defines = ["n"]} : (tensor<2x!graph.string>, tensor<!graph.string>) -> (tensor<?xi8, #graph.dims<["n"]>>, tensor<2x!graph.string>)
// CHECK-NEXT:    %e, %u = graph.string_case(%c) {defines = ["m"], upper = 1 : i64} : (tensor<2x!graph.string>) -> (tensor<?xi8, #graph.dims<["m"]>>, tensor<2x!graph.string>)
// CHECK-NEXT:    func.return %c, %u : tensor<2x!graph.string>, tensor<2x!graph.string>
// CHECK-NEXT:  }

// -----

func.func @string_lookup(%x: tensor<3x!graph.string>) -> tensor<3xi64> {
  %i = graph.string_lookup(%x) {keys = ["a", "ab", ""]} : (tensor<3x!graph.string>) -> tensor<3xi64>
  func.return %i : tensor<3xi64>
}

// CHECK-LABEL: func.func @string_lookup(
// CHECK-NEXT:    %i = graph.string_lookup(%x) {keys = ["a", "ab", ""]} : (tensor<3x!graph.string>) -> tensor<3xi64>
// CHECK-NEXT:    func.return %i : tensor<3xi64>
// CHECK-NEXT:  }

// -----

func.func @string_casts(%x: tensor<3xi32>, %s: tensor<3x!graph.string>) -> (tensor<3x!graph.string>, tensor<3xi64>, tensor<3xi1>) {
  %d, %t = graph.string_of_integers(%x) {defines = ["n"]} : (tensor<3xi32>) -> (tensor<?xi8, #graph.dims<["n"]>>, tensor<3x!graph.string>)
  %v, %ok = graph.integers_of_strings(%s) {unsigned = 0 : i64} : (tensor<3x!graph.string>) -> (tensor<3xi64>, tensor<3xi1>)
  func.return %t, %v, %ok : tensor<3x!graph.string>, tensor<3xi64>, tensor<3xi1>
}

// CHECK-LABEL: func.func @string_casts(
// CHECK-NEXT:    %d, %t = graph.string_of_integers(%x) {defines = ["n"]} : (tensor<3xi32>) -> (tensor<?xi8, #graph.dims<["n"]>>, tensor<3x!graph.string>)
// CHECK-NEXT:    %v, %ok = graph.integers_of_strings(%s) {unsigned = 0 : i64} : (tensor<3x!graph.string>) -> (tensor<3xi64>, tensor<3xi1>)
// CHECK-NEXT:    func.return %t, %v, %ok : tensor<3x!graph.string>, tensor<3xi64>, tensor<3xi1>
// CHECK-NEXT:  }
